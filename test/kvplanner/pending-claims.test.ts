// A failed attempt's take-back removes only what that attempt alone added to the guessed index:
// blocks another request routed to the same worker meanwhile runs through stay (the engine caches
// them for that request), whichever of the two is answered or fails first.
import { describe, expect, it } from 'vitest';
import { blockHashes } from '../../kvplanner/block-hash.ts';
import { PendingClaims } from '../../kvplanner/pending-claims.ts';
import { CtxgatePolicy } from '../../kvplanner/policies/ctxgate.ts';
import type { RouteInfo } from '../../kvplanner/types.ts';
import { info, tokens, workers } from './fixtures.ts';

const ROOT = 512;
/** a call of conversation 0 at `turn` (a new RouteInfo object each time, as each request has) */
function call(turn: number): RouteInfo {
  const ids = tokens(ROOT, 0, 64 + turn * 128);
  return info({ promptTokenIds: ids, blockHashes: blockHashes(ids, 16), promptTokens: ids.length });
}
/** blocks of the policy's index (every 4th block hash: 64 tokens each) a call's chain has */
const blocks = (turn: number): number => Math.floor((ROOT + 64 + turn * 128) / 64);
const ws1 = workers(1);

describe('take-back of a failed attempt (review F5)', () => {
  const ws = workers(1);

  it('keeps blocks a concurrent request on the same worker relies on, answered before the failure', () => {
    const p = new CtxgatePolicy();
    const a = call(2);
    const b = call(2);
    p.select(ws, a);
    const predicted = p.select(ws, b)!.predictedCachedTokens!;
    expect(predicted).toBe(blocks(2) * 64); // a's pick put it there
    p.observe({ workerId: 'w0', info: b, ok: true, reportedCachedTokens: predicted });
    p.observe({ workerId: 'w0', info: a, ok: false });
    expect(p.index.size('w0')).toBe(blocks(2)); // the old take-back left 0 until b's chain came again
  });

  it('keeps them when the failure comes while the other request is still in flight', () => {
    const p = new CtxgatePolicy();
    const a = call(2);
    const b = call(2);
    p.select(ws, a);
    p.select(ws, b);
    p.observe({ workerId: 'w0', info: a, ok: false });
    expect(p.index.size('w0')).toBe(blocks(2));
  });

  it('takes back what the failed attempt added beyond the other request, and all of it alone', () => {
    const p = new CtxgatePolicy();
    const longer = call(3);
    const shorter = call(1);
    p.select(ws, longer);
    p.select(ws, shorter);
    p.observe({ workerId: 'w0', info: longer, ok: false });
    expect(p.index.size('w0')).toBe(blocks(1));
    // it added nothing itself, but it inherited the blocks the longer one added and it ran
    // through: both failed, so nothing is left (a take-back decided at selection kept blocks(1))
    p.observe({ workerId: 'w0', info: shorter, ok: false });
    expect(p.index.size('w0')).toBe(0);

    const q = new CtxgatePolicy();
    const alone = call(3);
    q.select(ws, alone);
    q.observe({ workerId: 'w0', info: alone, ok: false });
    expect(q.index.size('w0')).toBe(0);
    expect((q as unknown as { claims: PendingClaims }).claims.count('w0')).toBe(0);
  });

  it('a later, longer pick that fails takes back only its own tail', () => {
    const p = new CtxgatePolicy();
    const first = call(1);
    const second = call(3);
    p.select(ws, first);
    expect(p.select(ws, second)!.predictedCachedTokens).toBe(blocks(1) * 64);
    p.observe({ workerId: 'w0', info: second, ok: false });
    expect(p.index.size('w0')).toBe(blocks(1));
    p.observe({ workerId: 'w0', info: first, ok: true, reportedCachedTokens: 0 });
    expect(p.index.size('w0')).toBe(blocks(1));
  });
});

describe('PendingClaims', () => {
  it('an answered chain keeps a claim up to where the two agree; other workers and other chains do not', () => {
    const c = new PendingClaims();
    const claim = { workerId: 'w0', hashes: ['r', 'a1', 'a2', 'a3'], held: 1, kept: 0 };
    c.pick(claim);
    c.answered('w1', ['r', 'a1', 'a2', 'a3']);
    c.answered('w0', ['r', 'b1', 'b2']);
    expect(claim.kept).toBe(1);
    c.answered('w0', ['r', 'a1', 'a2']);
    expect(claim.kept).toBe(3);
    c.answered('w0', ['r', 'a1', 'a2', 'a3', 'a4']);
    expect(claim.kept).toBe(4);
    expect(c.release(claim, true)).toBe(4);
    expect(c.count('w0')).toBe(0);
    const none = { workerId: 'w0', hashes: ['r'], held: 1, kept: 0 };
    c.pick(none); // added nothing, still registered: it may inherit another pick's blocks
    expect(c.count('w0')).toBe(1);
    expect(c.release(none)).toBe(1);
    expect(c.count('w0')).toBe(0);
  });
});

describe("a chain that branches after a claim's first blocks", () => {
  it('shares the claim only over the common prefix: the failed pick takes back its own tail', () => {
    const pc = new PendingClaims();
    const failed = { workerId: 'w1', hashes: ['a', 'b', 'c', 'd', 'e'], held: 1, kept: 1 };
    pc.pick(failed);
    const other = { workerId: 'w1', hashes: ['a', 'b', 'x', 'y', 'z', 'w'], held: 2, kept: 0 };
    pc.pick(other);
    const from = pc.release(failed, true); // was 5: c, d, e were never taken back
    expect(failed.hashes.slice(from)).toEqual(['c', 'd', 'e']);
    expect(other.held).toBe(1); // it runs through b, which the failed pick added: it inherits b
  });

  it('through the policy: two conversations on one root, the failed one takes back its history', () => {
    const p = new CtxgatePolicy();
    const ws = workers(1);
    // conversation 0 and 1 share the 512-token root, then differ
    const conv = (c: number, turn: number): RouteInfo => {
      const ids = tokens(ROOT, c, 64 + turn * 128);
      return info({ promptTokenIds: ids, blockHashes: blockHashes(ids, 16), promptTokens: ids.length });
    };
    const a = conv(0, 4);
    const b = conv(1, 4);
    p.select(ws, a);
    p.select(ws, b);
    p.observe({ workerId: 'w0', info: b, ok: true, reportedCachedTokens: ROOT });
    p.observe({ workerId: 'w0', info: a, ok: false });
    // only b's chain (root + its own history) is left: a's history past the root went back
    expect(p.index.size('w0')).toBe(blocks(4));
  });
});

describe('both picks fail: the take-back is decided when it runs, not at selection', () => {
  it("the second pick relied on the first one's guessed blocks; whichever fails first, nothing stays", () => {
    for (const secondFailsFirst of [true, false]) {
      const pc = new PendingClaims();
      const first = { workerId: 'w1', hashes: ['a', 'b', 'c'], held: 0, kept: 0 };
      const second = { workerId: 'w1', hashes: ['a', 'b', 'c', 'd'], held: 3, kept: 0 };
      pc.pick(first);
      pc.pick(second);
      const taken: string[] = [];
      const fail = (c: typeof first) => taken.push(...c.hashes.slice(pc.release(c, true)));
      if (secondFailsFirst) {
        fail(second);
        expect(taken).toEqual(['d']);
        fail(first);
      } else {
        fail(first);
        expect(taken).toEqual([]); // the second, still in flight, runs through a, b, c: it inherits them
        fail(second);
      }
      expect(taken.sort()).toEqual(['a', 'b', 'c', 'd']); // the old claims left a, b, c listed on w1
    }
  });

  it('an answered call keeps what it ran through even after both pending picks fail', () => {
    const pc = new PendingClaims();
    const first = { workerId: 'w1', hashes: ['a', 'b', 'c', 'd'], held: 0, kept: 0 };
    const second = { workerId: 'w1', hashes: ['a', 'b', 'c', 'd', 'e'], held: 4, kept: 0 };
    pc.pick(first);
    pc.pick(second);
    pc.answered('w1', ['a', 'b', 'x']);
    const taken = [...first.hashes.slice(pc.release(first, true)), ...second.hashes.slice(pc.release(second, true))];
    expect(taken.sort()).toEqual(['c', 'd', 'e']);
  });

  it('through the policy: the worker goes down with both calls in flight, its guessed entry is empty again', () => {
    for (const order of [
      [0, 1],
      [1, 0],
    ]) {
      const p = new CtxgatePolicy();
      const calls = [call(2), call(3)];
      p.select(ws1, calls[0]);
      expect(p.select(ws1, calls[1])!.predictedCachedTokens).toBe(blocks(2) * 64);
      for (const i of order) p.observe({ workerId: 'w0', info: calls[i], ok: false });
      expect(p.index.size('w0')).toBe(0); // was blocks(2) when the first one failed first
    }
  });

  it('forgetting the worker drops its claims: a later failure does not take back blocks added since', () => {
    const p = new CtxgatePolicy();
    const old = call(2);
    p.select(ws1, old);
    p.forgetWorker('w0');
    const fresh = call(2);
    p.select(ws1, fresh);
    p.observe({ workerId: 'w0', info: fresh, ok: true, reportedCachedTokens: 0 });
    p.observe({ workerId: 'w0', info: old, ok: false });
    expect(p.index.size('w0')).toBe(blocks(2));
  });
});
