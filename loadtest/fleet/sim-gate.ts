// The fleet simulator's late binding (dispatch 'admission'): the gateway's gate on a virtual
// clock, built from the code the gate runs (kvplanner/admission/: arrival.ts binds at arrival,
// release-order.ts places a held call, fair-queue.ts holds it, release-look.ts releases), so a
// test can drive it and the gate side by side (test/loadtest/admission-lockstep.test.ts).
// A call that one worker's cache holds (≥ locality_min_tokens beyond the runner-up, by the
// policy's own index) goes at arrival, where the policy sends it (its cache is there and may be
// evicted while it waits), unless another tenant holds calls (the gate's rule: then it is held like
// any call); any other call goes at once among the workers that can admit it when nothing is held
// and one can (the gate's pass; it never enters the queue), else waits in the per-tenant fair
// queue, with the product's bounds (max_queued, max_queued_per_tenant, max_wait_ms). A call that meets a full queue is held and
// one held call spills (the queue's choice), and a held call whose max_wait_ms passes spills: it
// is dispatched at once as at arrival (the policy's pick among all workers, queueing at the
// engine), so every call completes. A look is the gate's (release-look.ts: at most one call per
// worker that can admit, routed after the look), repeated until one releases nothing.
// Cost: arrive O(workers) index reads + the queue's push (a pass: O(workers)); look as
// release-look.ts per look, one more look than it takes; spillDue O(held) per spilled call (taken
// out of its tenant's queue).
// Settings: ADMISSION_DEFAULTS (admission-defaults.ts), overridden by the FleetConfig's.
import { ADMISSION_DEFAULTS, type AdmissionSettings } from '../../kvplanner/admission/admission-defaults.ts';
import { admissibleWorkers, canAdmit } from '../../kvplanner/admission/can-admit.ts';
import { bindsAtArrival, localityHome, readHolders } from '../../kvplanner/admission/arrival.ts';
import { FairQueue } from '../../kvplanner/admission/fair-queue.ts';
import { releaseLook } from '../../kvplanner/admission/release-look.ts';
import { releasePlacement } from '../../kvplanner/admission/release-order.ts';
import type { Policy, RouteInfo, WorkerView } from '../../kvplanner/types.ts';
import type { FleetRequest } from './trace.ts';

/** A call held at the gateway. */
export interface SimHeld {
  req: FleetRequest;
  info: RouteInfo;
  /** when it was first among the calls a free worker looked at (its locality wait starts) */
  consideredMs: number;
  /** when it was held; -1 once it left the queue (released, spilled or dropped) */
  heldMs: number;
}

/** Sends a call now among `candidates` (the policy picks). */
export type SimDispatch = (
  req: FleetRequest,
  info: RouteInfo,
  candidates: readonly WorkerView[],
  nowMs: number,
) => void;

export class SimGate {
  readonly settings: AdmissionSettings;
  private readonly queue: FairQueue<SimHeld>;
  /** held calls in the order they were held = deadline order (held time + one constant); the ones
   *  that left are skipped at the head */
  private readonly heldOrder: SimHeld[] = [];
  private heldHead = 0;
  private readonly scratch: number[] = [];
  /** calls held, the most held at once, spilled (queue full; deadline), bound at arrival, passed
   *  at arrival (nothing held, a worker free) */
  queued = 0;
  peak = 0;
  spilledFull = 0;
  spilledDeadline = 0;
  bound = 0;
  passed = 0;

  constructor(
    private readonly policy: Policy,
    private readonly views: readonly WorkerView[],
    private readonly dispatch: SimDispatch,
    settings: Partial<AdmissionSettings> = {},
  ) {
    this.settings = { ...ADMISSION_DEFAULTS, ...settings };
    this.queue = new FairQueue<SimHeld>({
      maxQueued: this.settings.max_queued,
      maxPerTenant: this.settings.max_queued_per_tenant,
      maxWaitMs: this.settings.max_wait_ms,
      msPerHeld: this.settings.release_ms_per_held,
      slackPerDrain: this.settings.release_slack_per_drain,
    });
  }

  get size(): number {
    return this.queue.size;
  }

  /** A call arrives: dispatched now (bound at arrival; passed, as the gate passes it: nothing held
   *  and a worker can admit it; or the newcomer a full queue spilled: undefined) or held (the held
   *  call; one older held call may have spilled; the caller looks next). Only what the gate holds
   *  passes through the queue: a passed call never enters its mean interval between releases
   *  (fair-queue.ts drainCapMs), as in `serve` (s39 F2: the simulator once queued and at
   *  once released every call it did not bind, zero gaps that tightened its drain bound). */
  arrive(req: FleetRequest, info: RouteInfo, nowMs: number): SimHeld | undefined {
    const s = this.settings;
    // nothing held and every worker can admit: it goes now, where the policy sends it (the gate's
    // first pass, admission-gate.ts admit: binding it to its holder would route it the same)
    if (this.queue.size === 0 && this.views.every((v) => canAdmit(v, s))) {
      this.passed++;
      this.dispatch(req, info, this.views, nowMs);
      return undefined;
    }
    // a call one worker's cache holds goes now, where the policy sends it: its cache is there (the
    // turn before may still be running), and waiting would let it be evicted; unless another
    // tenant holds calls (the gate's rule, arrival.ts: those go first, by turns, so one tenant's
    // continuations cannot keep the workers busy while another's wait)
    const read = readHolders(this.policy, this.views, info, this.scratch);
    if (bindsAtArrival(read, info.tenant, this.queue, s)) {
      this.bound++;
      this.dispatch(req, info, this.views, nowMs);
      return undefined;
    }
    // nothing held and a worker can admit it: it goes now, among the workers that can (the gate's
    // pass: admission-gate.ts admit; with every worker able, that is every worker)
    if (this.queue.size === 0) {
      const able = admissibleWorkers(this.views, s);
      if (able.length > 0) {
        this.passed++;
        this.dispatch(req, info, able, nowMs);
        return undefined;
      }
    }
    const held: SimHeld = { req, info, consideredMs: -1, heldMs: nowMs };
    // released in the product's order (release-order.ts): cheap prefills first, within a bounded
    // slack, a held call's prompt charged once. The queue full (in total or the tenant's share):
    // this call is held and one held call, the queue's choice (fair-queue.ts), is dispatched now as
    // at arrival (spilling the newcomer instead lets later calls overtake the held ones at the
    // engines: ×2 p90 TTFT 1262 s vs 923 s)
    const place = releasePlacement(this.queue, info, read.top, s);
    const out = this.queue.push(info.tenant, held, nowMs, place.slackMs, place.chain);
    this.queued++;
    if (out) {
      this.spilledFull++;
      this.spill(out, nowMs);
      if (out === held) return undefined;
    }
    this.heldOrder.push(held);
    if (this.queue.size > this.peak) this.peak = this.queue.size;
    return held;
  }

  /** Looks as `serve`'s gate does (release-look.ts), until a look releases nothing: each look
   *  takes at most one call per worker that can admit (the views read once), and the calls it
   *  released are routed after it, in release order; the next look sees them at their workers.
   *  The gate looks again at its next wake (an attempt's end, a scrape round, or within
   *  PUMP_FALLBACK_MS), by when the proxy has sent them; here at once, on the same clock. (The
   *  simulator once re-read the views after each dispatch inside one look: with max_waiting 2 a
   *  worker with two free places took two calls in one look, and the release order differed from
   *  the gate's: test/loadtest/admission-lockstep.test.ts.) Returns the calls released. */
  look(nowMs: number): number {
    let total = 0;
    const out: [SimHeld, WorkerView[]][] = [];
    while (this.queue.size > 0) {
      const n = releaseLook(this.queue, {
        views: this.views,
        settings: this.settings,
        nowMs,
        // the worker whose cache holds the call's prompt, if it is one to wait for (arrival.ts: the
        // policy's own estimate, read-only; read before this look's calls are routed, as the gate)
        holderOf: (h) => localityHome(readHolders(this.policy, this.views, h.info, this.scratch), this.settings),
        release: (h, only) => {
          h.heldMs = -1;
          out.push([h, only]);
        },
      });
      if (n === 0) break;
      total += n;
      for (const [h, only] of out) {
        h.info.nowMs = nowMs;
        this.dispatch(h.req, h.info, only, nowMs);
      }
      out.length = 0;
    }
    return total;
  }

  /** When the oldest held call's max_wait_ms passes (Infinity: none held). */
  nextDeadline(): number {
    while (this.heldHead < this.heldOrder.length && this.heldOrder[this.heldHead].heldMs < 0) this.heldHead++;
    return this.heldHead < this.heldOrder.length
      ? this.heldOrder[this.heldHead].heldMs + this.settings.max_wait_ms
      : Infinity;
  }

  /** Held calls whose max_wait_ms passed by `nowMs` spill. */
  spillDue(nowMs: number): void {
    while (this.nextDeadline() <= nowMs) {
      const h = this.heldOrder[this.heldHead];
      this.queue.remove(h.info.tenant, h);
      this.spilledDeadline++;
      this.spill(h, nowMs);
    }
  }

  /** The held call's client left: out of the queue, never sent. */
  drop(h: SimHeld): void {
    this.queue.remove(h.info.tenant, h);
    h.heldMs = -1;
  }

  /** A call leaves the queue (the queue already let it go, or it is the newcomer the queue could
   *  not hold) and is dispatched now, as at arrival. */
  private spill(h: SimHeld, nowMs: number): void {
    h.heldMs = -1;
    h.info.nowMs = nowMs;
    this.dispatch(h.req, h.info, this.views, nowMs);
  }
}
