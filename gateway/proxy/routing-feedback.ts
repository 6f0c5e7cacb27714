// The routing policy's feedback, as a subscriber of the attempt lifecycle (attempt.ts): every
// attempt's end reaches the policy, the failed ones too, not only the request's last worker.
//  - A failed attempt (any outcome but ok) is taken back at once, synchronously, before the
//    failover loop routes the next attempt: the policy forgets what its select() recorded for
//    that pick on that worker (the prompt's chain in an approximate index, the active blocks it
//    counted as that worker's load). Otherwise the next pick and later calls would count the
//    failed worker as holding the prompt and as busier than it is. The policies key their pending
//    picks by the RouteInfo object, which all attempts of a request share, so the take-back must
//    come before the next select() overwrites the pick.
//  - An answered attempt is observed after the response (setImmediate, off the hot path, or
//    earlier when the request's accounting runs first and settles it: Attempt.settleFeedback) with
//    what the worker reported (cached and prompt tokens); just before, the savings attribution
//    reads what a uniformly chosen healthy worker would have held (policy.expectedCachedTokens).
// The worker's own bookkeeping (in flight, queued prefill released at the first byte, health) is
// workerObserver's. Cost: one policy.observe per attempt; O(index lookups) of the policy.
import type { RouteFeedback, RouteInfo, WorkerView } from '../../kvplanner/types.ts';
import { lap, tick } from '../../middleware/perf/stage-timers.ts';
import type { ModelRoute } from '../upstream/fleet.ts';
import type { Attempt, AttemptObserver } from './attempt.ts';

function guarded(what: string, f: () => void): void {
  try {
    f();
  } catch (err) {
    // A policy's failure must not fail the request or the gateway.
    process.emitWarning(`ctxgate: ${what} threw: ${(err as Error).message}`);
  }
}

function feedback(a: Attempt, info: RouteInfo, ok: boolean): RouteFeedback {
  return {
    workerId: a.worker.id,
    info,
    reportedCachedTokens: ok ? a.usage?.cachedTokens : undefined,
    promptTokens: ok ? a.usage?.promptTokens : undefined,
    ok,
    predictedCachedTokens: a.choice.predictedCachedTokens,
  };
}

/**
 * One request's feedback observer. The deferred feedback is a bound method, not a per-attempt
 * arrow: tsx compiles with esbuild's keepNames, which names every arrow assigned to a name
 * (Object.defineProperty, ~0.5-1 µs per call); bind does not.
 */
class RoutingFeedback implements AttemptObserver {
  // Dropped once the answered attempt was observed: the request's accounting, queued for later
  // (after-answer.ts), keeps that attempt, and the RouteInfo holds the prompt's ids and body.
  private held: RouteInfo | undefined;
  private readonly policy: ModelRoute['policy'];

  constructor(
    private readonly route: ModelRoute,
    info: RouteInfo,
  ) {
    this.held = info;
    this.policy = route.policy;
  }

  onEnd(a: Attempt): void {
    const i = this.held;
    if (!i) return;
    const { policy } = this;
    if (a.outcome !== 'ok') {
      if (policy.observe) guarded('policy.observe', () => policy.observe!(feedback(a, i, false)));
      return;
    }
    const run = this.settle.bind(this, a, i);
    a.settleFeedback = run;
    setImmediate(run);
  }

  /** The answered attempt's feedback, once: from the setImmediate or from the accounting, first come. */
  private settle(a: Attempt, i: RouteInfo): void {
    if (a.settleFeedback === undefined) return;
    a.settleFeedback = undefined;
    this.held = undefined;
    const { route, policy } = this;
    let t = tick();
    if (policy.expectedCachedTokens)
      guarded('policy.expectedCachedTokens', () => {
        const views: WorkerView[] = [];
        for (const w of route.workers) if (w.healthy) views.push(w.view());
        if (views.length) a.uniformCachedTokens = Math.round(policy.expectedCachedTokens!(views, i));
      });
    t = lap('routing_expected', t);
    if (policy.observe) guarded('policy.observe', () => policy.observe!(feedback(a, i, true)));
    lap('routing_observe', t);
  }
}

export function routingObserver(route: ModelRoute, info: RouteInfo): AttemptObserver {
  return new RoutingFeedback(route, info);
}
