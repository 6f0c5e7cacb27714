// The per-call metrics through bound children (finish.ts, gateway/metrics-children.ts) must leave
// /metrics byte-identical to prom-client's own inc/observe/set with label objects, as main filed
// them: the same generated calls go through the real finish() on one registry and through the
// label-object calls on another, and the two expositions are compared whole. Also: a reset, a
// gauge set by another caller and a rejected value in the middle; the child cache stays bounded.
// The per-attempt series (worker in flight, attempts, routing decisions) and late binding's
// per-call series (outcomes, waits, held) the same way.
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import type { GatewayContext } from '../../gateway/context.ts';
import { mulberry32 } from '../../kvplanner/rng.ts';
import { CHILDREN_MAX, counterChildren } from '../../gateway/metrics-children.ts';
import { type GatewayMetrics, countReceipts, createMetrics, statusClass } from '../../gateway/metrics.ts';
import { AfterAnswer } from '../../gateway/proxy/after-answer.ts';
import { type Exchange, finish } from '../../gateway/proxy/finish.ts';
import type { UsageEvent } from '../../gateway/usage-event.ts';
import type { BreakCause, PrefixDiagnostics, Receipt } from '../../middleware/types.ts';

const CAUSES: BreakCause[] = ['none', 'new_session', 'system_changed', 'history_edited', 'truncated'];
const RECEIPTS: Receipt[][] = [
  [],
  [{ stage: 'ledger', action: 'tombstone', reason: '' }],
  [
    { stage: 'compaction', action: 'compacted', tokens_before: 9000, tokens_after: 2500, reason: '' },
    { stage: 'volatile', action: 'relocate', reason: '' },
  ],
];

interface Filed {
  ex: Exchange;
  prefix?: PrefixDiagnostics;
  receipts: Receipt[];
  subBlock: boolean;
}

function call(r: () => number, i: number): Filed {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  const usage =
    r() < 0.85
      ? { promptTokens: Math.floor(r() * 120_000), cachedTokens: Math.floor(r() * 90_000), outputTokens: 1 + i }
      : undefined;
  const cause = pick(CAUSES);
  const prefix: PrefixDiagnostics | undefined =
    r() < 0.9
      ? { predicted_cached_tokens: r() < 0.2 ? 0 : Math.floor(r() * 80_000), prompt_tokens: 5000, break_cause: cause }
      : undefined;
  const receipts = pick(RECEIPTS);
  const t0 = performance.now() - r() * 40_000;
  const ex = {
    t0,
    time: 1_700_000_000_000 + i,
    requestId: `r${i}`,
    principal: { tenant: pick(['acme', 'globex', 'initech']), keyId: 'k' },
    api: pick(['chat', 'responses', 'messages']),
    model: pick(['qwen', 'llama', '']),
    stream: r() < 0.5,
    status: pick([200, 200, 200, 429, 499, 502, 0]),
    attempts: 1,
    attemptList: [],
    upstreamWaitMs: r() * 30_000,
    route: { policy: { name: pick(['ctxgate', 'round_robin']) } },
    worker: r() < 0.95 ? { id: pick(['w0', 'w1', 'w2', 'w3']) } : undefined,
    choice: { branch: 'sticky', predictedCachedTokens: r() < 0.8 ? Math.floor(r() * 70_000) : undefined },
    ttftAt: r() < 0.7 ? t0 + r() * 9000 : undefined,
    usage,
    result: prefix || receipts.length ? { prefix, receipts, sessionId: 's' } : undefined,
  } as unknown as Exchange;
  const subBlock =
    prefix !== undefined &&
    prefix.break_cause !== 'new_session' &&
    prefix.prompt_tokens > 0 &&
    prefix.predicted_cached_tokens === 0;
  return { ex, prefix, receipts, subBlock };
}

/** main's per-call metrics block (f3f38c6 finish.ts), label objects through prom-client's API. */
function reference(m: GatewayMetrics, f: Filed, ev: UsageEvent): void {
  const { ex, prefix, receipts, subBlock } = f;
  const model = ex.model || 'unknown';
  const { status, api, worker, choice, route } = ex;
  m.requests.inc({ model, tenant: ev.tenant, status: status === 499 ? '499' : statusClass(status), api });
  m.requestDuration.observe({ model }, ev.totalMs / 1000);
  m.gatewayOverhead.observe({ model }, ev.gatewayOverheadMs / 1000);
  if (ev.ttftMs !== undefined) m.ttft.observe({ model }, ev.ttftMs / 1000);
  if (ev.usageReported) {
    const l = { model, tenant: ev.tenant };
    m.promptTokens.inc(l, ev.promptTokens);
    m.cachedTokens.inc(l, ev.cachedTokens);
    m.outputTokens.inc(l, ev.outputTokens);
    if (worker && ev.promptTokens > 0)
      m.workerCacheHitRatio.set({ model, worker: worker.id }, ev.cachedTokens / ev.promptTokens);
  }
  if (ev.predictedCachedTokens) m.predictedCachedTokens.inc({ model, tenant: ev.tenant }, ev.predictedCachedTokens);
  if (choice && route && choice.predictedCachedTokens !== undefined && ev.usageReported) {
    const policy = route.policy.name;
    m.routingCachedTokens.inc({ model, policy, source: 'predicted' }, choice.predictedCachedTokens);
    m.routingCachedTokens.inc({ model, policy, source: 'reported' }, ev.cachedTokens);
  }
  if (subBlock) m.subBlockPrefix.inc({ model });
  const cause = prefix?.break_cause;
  if (cause && cause !== 'none') m.cacheBreaks.inc({ model, cause });
  // countReceipts as main had it (label objects).
  for (const rc of receipts) {
    if (rc.stage === 'ledger') m.tombstones.inc({ model });
    else if (rc.stage === 'compaction') {
      m.compactions.inc({ model, outcome: rc.action });
      m.compactionTokensSaved.inc({ model }, Math.max(0, rc.tokens_before! - rc.tokens_after!));
    }
  }
}

function gateway(metrics: GatewayMetrics, onUsage: (ev: UsageEvent) => void): GatewayContext {
  return {
    metrics,
    afterAnswer: new AfterAnswer(() => {}),
    records: { add() {} },
    onUsage,
  } as unknown as GatewayContext;
}

/** Both registries take the same 3,000 random calls, `step` writing through children on `mNew` and
 *  label objects on `mRef`; both texts are read half-way (then both reset) and at the end. */
async function mirrored(
  seed: number,
  step: (
    i: number,
    r: () => number,
    pick: <T>(xs: readonly T[]) => T,
    mNew: ReturnType<typeof createMetrics>,
    mRef: ReturnType<typeof createMetrics>,
  ) => void,
) {
  const regNew = new Registry();
  const regRef = new Registry();
  const mNew = createMetrics(regNew);
  const mRef = createMetrics(regRef);
  const r = mulberry32(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  const texts: [string, string][] = [];
  for (let i = 0; i < 3000; i++) {
    step(i, r, pick, mNew, mRef);
    if (i === 1500) {
      texts.push([await regNew.metrics(), await regRef.metrics()]);
      regNew.resetMetrics();
      regRef.resetMetrics();
    }
  }
  texts.push([await regNew.metrics(), await regRef.metrics()]);
  return { texts, mNew, regNew, regRef };
}

describe('per-call metrics through bound children', () => {
  it('/metrics is byte-identical to the label-object calls after the same traffic', async () => {
    const regNew = new Registry();
    const regRef = new Registry();
    const mNew = createMetrics(regNew);
    const mRef = createMetrics(regRef);
    let filed: Filed | undefined;
    let calls = 0;
    const gw = gateway(mNew, (ev) => {
      reference(mRef, filed!, ev);
      calls++;
    });
    const r = mulberry32(17);
    const texts: [string, string][] = [];
    for (let i = 0; i < 3000; i++) {
      filed = call(r, i);
      finish(gw, filed.ex);
      gw.afterAnswer.drain();
      if (i === 1000) {
        // A scrape's worth of comparison, then a reset: children must drop the series they held.
        texts.push([await regNew.metrics(), await regRef.metrics()]);
        regNew.resetMetrics();
        regRef.resetMetrics();
      }
      if (i % 97 === 0) {
        // Another caller (the recorder) sets the same gauge series: the child must not write to the old one.
        mNew.workerCacheHitRatio.set({ model: 'qwen', worker: 'w1' }, 0.125);
        mRef.workerCacheHitRatio.set({ model: 'qwen', worker: 'w1' }, 0.125);
      }
    }
    texts.push([await regNew.metrics(), await regRef.metrics()]);
    expect(calls).toBe(3000);
    for (const [a, b] of texts) {
      expect(a).toContain('ctxgate_requests_total{model="unknown",tenant="acme",status="5xx",api="chat"}');
      expect(a).toContain('ctxgate_gateway_overhead_seconds_bucket{le="0.0001",model="qwen"}');
      expect(a).toContain('ctxgate_compaction_tokens_saved_total{model="llama"}');
      expect(a).toBe(b);
    }
    // The comparison sees a one-call difference.
    mNew.perCall.requestDuration.at('qwen').observe(0.003);
    expect(await regNew.metrics()).not.toBe(await regRef.metrics());
  });

  it('the per-attempt series (in flight, attempts, routing decisions) read as the label-object calls do', async () => {
    // worker.ts begin/end, attempt.ts metricsObserver and upstream-call.ts's routing decision go
    // through children; main called prom-client with label objects. Same calls, both registries.
    const { texts, mNew, regNew, regRef } = await mirrored(29, (i, r, pick, mNew, mRef) => {
      const model = pick(['qwen', 'llama']);
      const worker = pick(['w0', 'w1', 'w2']);
      const op = r();
      if (op < 0.4) {
        const n = Math.floor(r() * 8);
        mNew.perCall.workerInFlight.at(model, worker).set(n);
        mRef.workerInFlight.set({ model, worker }, n);
      } else if (op < 0.7) {
        const outcome = pick(['ok', '4xx', '5xx', 'timeout', 'error', 'bad_response']);
        mNew.perCall.upstreamAttempts.at(model, worker, outcome).inc();
        mRef.upstreamAttempts.inc({ model, worker, outcome });
      } else {
        const policy = pick(['ctxgate', 'round_robin']);
        const branch = pick(['sticky', 'new_session', 'overflow', 'migrate']);
        mNew.perCall.routingDecisions.at(model, policy, branch).inc();
        mRef.routingDecisions.inc({ model, policy, branch });
      }
      if (i % 89 === 0) {
        // A worker built for the same series (a second fleet) sets it through prom-client.
        mNew.workerInFlight.set({ model: 'qwen', worker: 'w1' }, 0);
        mRef.workerInFlight.set({ model: 'qwen', worker: 'w1' }, 0);
      }
    });
    for (const [a, b] of texts) {
      expect(a).toContain('ctxgate_worker_in_flight{model="llama",worker="w2"}');
      expect(a).toContain('ctxgate_upstream_attempts_total{model="qwen",worker="w0",outcome="timeout"}');
      expect(a).toContain('ctxgate_routing_decisions_total{model="llama",policy="ctxgate",branch="migrate"}');
      expect(a).toBe(b);
    }
    // The comparison sees a one-call difference.
    mNew.perCall.upstreamAttempts.at('qwen', 'w0', 'ok').inc();
    expect(await regNew.metrics()).not.toBe(await regRef.metrics());
  });

  it("late binding's per-call series (outcomes, waits, held) read as the label-object calls do", async () => {
    // assemble.ts gate.onOutcome goes through children; main called prom-client with label
    // objects. The held gauge is also set at startup through prom-client (an outside set).
    const outcomes = ['passed', 'bound', 'queued', 'released', 'spilled_full', 'spilled_deadline', 'refused'];
    const { texts, mNew, regNew, regRef } = await mirrored(31, (i, r, pick, mNew, mRef) => {
      const model = pick(['m', 'n']);
      const outcome = pick(outcomes);
      mNew.perCall.admissionOutcomes.at(model, outcome).inc();
      mRef.admissionOutcomes.inc({ model, outcome });
      if (r() < 0.5) {
        const waited = Math.floor(r() * 5000) / 1000;
        mNew.perCall.admissionWait.at(model, outcome).observe(waited);
        mRef.admissionWait.observe({ model, outcome }, waited);
      }
      if (outcome !== 'passed' && outcome !== 'bound') {
        const size = Math.floor(r() * 32);
        mNew.perCall.admissionHeld.at(model).set(size);
        mRef.admissionHeld.set({ model }, size);
      }
      if (i % 97 === 0) {
        mNew.admissionHeld.set({ model: 'm' }, 0);
        mRef.admissionHeld.set({ model: 'm' }, 0);
      }
    });
    for (const [a, b] of texts) {
      expect(a).toContain('ctxgate_admission_outcomes_total{model="n",outcome="spilled_deadline"}');
      expect(a).toContain('ctxgate_admission_wait_seconds_bucket{le="0.5",model="m",outcome="released"}');
      expect(a).toContain('ctxgate_admission_held{model="n"}');
      expect(a).toBe(b);
    }
    mNew.perCall.admissionWait.at('m', 'queued').observe(0.2);
    expect(await regNew.metrics()).not.toBe(await regRef.metrics());
  });

  it('values prom-client rejects are rejected the same way, and the series stays right', async () => {
    const reg = new Registry();
    const m = createMetrics(reg);
    const c = m.perCall.promptTokens.at('qwen', 'acme');
    c.inc(5);
    expect(() => c.inc(-1)).toThrow('It is not possible to decrease a counter');
    expect(() => c.inc(Number.POSITIVE_INFINITY)).toThrow('Value is not a valid number');
    expect(() => m.perCall.ttft.at('qwen').observe(Number.NaN)).toThrow('Value is not a valid number');
    c.inc(2);
    countReceipts(m, 'qwen', [{ stage: 'ledger', action: 'tombstone', reason: '' }]);
    const text = await reg.metrics();
    expect(text).toContain('ctxgate_prompt_tokens_total{model="qwen",tenant="acme"} 7');
    expect(text).toContain('ctxgate_tombstones_total{model="qwen"} 1');
    // prom-client throws before it keys a series: none exists.
    expect(text).not.toContain('ctxgate_ttft_seconds_count{model="qwen"}');
  });

  it('keeps at most CHILDREN_MAX children; past it every call still counts', async () => {
    const reg = new Registry();
    const m = createMetrics(reg);
    const kids = counterChildren(m.promptTokens);
    for (let i = 0; i < CHILDREN_MAX; i++) kids.at('m', `t${i}`);
    const past = kids.at('m', 'late');
    expect(kids.at('m', 'late')).not.toBe(past);
    expect(kids.at('m', 't3')).toBe(kids.at('m', 't3'));
    past.inc(3);
    kids.at('m', 'late').inc(4);
    expect(await reg.metrics()).toContain('ctxgate_prompt_tokens_total{model="m",tenant="late"} 7');
  });
});
