// A routing decision's index insert left for after its request's send (RouteInfo.sent,
// kvplanner/deferred-work.ts postpone): the gateway runs it once the body went upstream, while the
// worker computes. It must stay exact: whatever acts on the index next (another decision, an
// estimate, feedback, statistics, a replica's write) first does the postponed insert, so every
// decision, prediction, index entry and index event is the one an insert at select() gives.
import { describe, expect, it } from 'vitest';
import { CtxgatePolicy } from '../../kvplanner/policies/ctxgate.ts';
import type { IndexEvent } from '../../kvplanner/prefix-index.ts';
import type { RouteInfo } from '../../kvplanner/types.ts';
import { info, workers } from './fixtures.ts';

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => (s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32;
}

/** A growing session's call: its chain extends the session's last one by `grow` blocks. */
function call(session: number, blocks: number): RouteInfo {
  const hashes = Array.from({ length: blocks }, (_, i) => (i < 8 ? `root-${i}` : `s${session}-${i}`));
  return info({ sessionId: `s${session}`, blockHashes: hashes, promptTokens: blocks * 16 });
}

describe('ctxgate: the insert of a decision waits for its send', () => {
  it('is not done in select(): the index hears of it when the send runs it', () => {
    const p = new CtxgatePolicy();
    const events: IndexEvent[] = [];
    p.index.onChange((e) => events.push(e));
    const runs: Array<() => void> = [];
    const a = { ...call(1, 64), sent: (run: () => void) => void runs.push(run) };
    const ca = p.select(workers(2), a)!;
    expect(runs.length).toBe(1);
    expect(events).toEqual([]);
    runs[0]();
    expect(events.map((e) => [e.kind, e.workerId, e.hashes.length])).toEqual([['insert', ca.worker.id, 16]]);
    // run twice (the gate opens once, but a later decision may have done it already): nothing more
    runs[0]();
    expect(events.length).toBe(1);
  });

  it('whatever reads the index first does the waiting insert', () => {
    const p = new CtxgatePolicy();
    const a = { ...call(1, 64), sent: () => undefined }; // the send never comes
    const ca = p.select(workers(2), a)!;
    const indexed = a.blockHashes!.filter((_, i) => i % 4 === 3);
    expect(p.index.matchLength(ca.worker.id, indexed)).toBe(16);
  });

  it('decides, predicts and indexes exactly as an insert at select(), sends late, early or never', () => {
    for (const seed of [1, 2, 3]) {
      const r = rng(seed);
      const opts = { default_kv_tokens: 40_000 }; // 625 index blocks over 3 workers: entries evict
      const now = new CtxgatePolicy(opts);
      const later = new CtxgatePolicy(opts);
      const evNow: IndexEvent[] = [];
      const evLater: IndexEvent[] = [];
      now.index.onChange((e) => evNow.push(e));
      later.index.onChange((e) => evLater.push(e));
      const ws1 = workers(3);
      const ws2 = workers(3);
      const sends: Array<() => void> = [];
      const size = new Map<number, number>();
      let waited = 0;
      for (let k = 0; k < 400; k++) {
        const s = Math.floor(r() * 12);
        const blocks = Math.min(400, (size.get(s) ?? 8) + 4 + Math.floor(r() * 40));
        size.set(s, r() < 0.05 ? 8 : blocks);
        const a = call(s, blocks);
        const b = { ...a, sent: (run: () => void) => void sends.push(run) };
        const ca = now.select(ws1, a)!;
        const cb = later.select(ws2, b)!;
        expect([cb.worker.id, cb.branch, cb.predictedCachedTokens]).toEqual([
          ca.worker.id,
          ca.branch,
          ca.predictedCachedTokens,
        ]);
        // the send runs now, after a while, or not at all (the next read does the insert)
        const x = r();
        if (x < 0.4) sends.splice(0).forEach((run) => run());
        else if (x < 0.7) waited++;
        else sends.length = 0;
        if (r() < 0.3) {
          const ok = r() < 0.9;
          const reported = r() < 0.7 ? ca.predictedCachedTokens : Math.floor(r() * 200);
          now.observe({ workerId: ca.worker.id, info: a, ok, reportedCachedTokens: reported });
          later.observe({ workerId: cb.worker.id, info: b, ok, reportedCachedTokens: reported });
        }
        if (r() < 0.1) expect(later.expectedCachedTokens(ws2, b)).toBe(now.expectedCachedTokens(ws1, a));
      }
      expect(waited).toBeGreaterThan(50);
      expect(later.stats()).toEqual(now.stats());
      expect(evLater).toEqual(evNow);
    }
  });

  it('a long chain with a caller that steps it goes through the steps as before', () => {
    const p = new CtxgatePolicy();
    const steppers: Array<() => boolean> = [];
    const runs: Array<() => void> = [];
    const a = {
      ...call(1, 8000),
      defer: (s: () => boolean) => void steppers.push(s),
      sent: (run: () => void) => void runs.push(run),
    };
    p.select(workers(2), a);
    expect(steppers.length).toBe(1);
    expect(runs.length).toBe(0);
  });
});
