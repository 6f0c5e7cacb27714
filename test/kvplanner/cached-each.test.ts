// Each worker's cached tokens of a prompt in one call (kvplanner/admission/cached-each.ts): the
// values are what the policy gives asked one worker at a time, and the prompt's chain is read once,
// not once per worker (review F2: a text-only prompt was SHA-256-hashed per worker per held call).
import { describe, expect, it } from 'vitest';
import { blockHashes } from '../../kvplanner/block-hash.ts';
import { cachedTokensEach, leader } from '../../kvplanner/admission/cached-each.ts';
import { releaseCost } from '../../kvplanner/admission/release-order.ts';
import { CtxgatePolicy } from '../../kvplanner/policies/ctxgate.ts';
import { SglangCacheAwarePolicy } from '../../kvplanner/policies/sglang-cache-aware.ts';
import type { Policy, RouteInfo } from '../../kvplanner/types.ts';
import { info, tokens, workers } from './fixtures.ts';

const ws = workers(8);

function tokenCall(session: number, turn: number, withHashes: boolean): RouteInfo {
  const ids = tokens(256, session, 48 + turn * 96);
  return info({
    sessionId: `s${session}`,
    promptTokenIds: ids,
    blockHashes: withHashes ? blockHashes(ids, 16) : undefined,
    promptTokens: ids.length,
  });
}

function textCall(session: number, turn: number): RouteInfo {
  const text = `system: shared root ${'r'.repeat(400)}\n${`session ${session} turn `.repeat(turn * 10 + 3)}`;
  return info({ sessionId: `s${session}`, text, promptTokens: Math.ceil(text.length / 4) });
}

/** Routes a few sessions so the policy's index holds different prefixes on different workers. */
function warmed(p: Policy, call: (s: number, t: number) => RouteInfo): void {
  for (let t = 0; t < 4; t++)
    for (let s = 0; s < 6; s++) {
      const i = call(s, t);
      const c = p.select(ws, i);
      if (c) p.observe?.({ workerId: c.worker.id, info: i, ok: true });
    }
}

const cases: [string, () => Policy, (s: number, t: number) => RouteInfo][] = [
  ['ctxgate, block hashes', () => new CtxgatePolicy({ block_size: 16 }), (s, t) => tokenCall(s, t, true)],
  ['ctxgate, token ids only', () => new CtxgatePolicy({ block_size: 16 }), (s, t) => tokenCall(s, t, false)],
  ['ctxgate, text only', () => new CtxgatePolicy({ block_size: 16 }), textCall],
  ['sglang_cache_aware, text', () => new SglangCacheAwarePolicy(), textCall],
];

describe('cachedTokensEach', () => {
  it.each(cases)('%s: equals expectedCachedTokens asked one worker at a time', (_name, make, call) => {
    const p = make();
    warmed(p, call);
    const out: number[] = [];
    let nonZero = 0;
    for (let s = 0; s < 8; s++)
      for (let t = 0; t < 6; t++) {
        const i = call(s, t);
        expect(cachedTokensEach(p, ws, i, out)).toBe(true);
        const one = ws.map((w) => p.expectedCachedTokens!([w], i));
        expect(out).toEqual(one);
        if (one.some((c) => c > 0)) nonZero++;
      }
    // the comparison means something only if some workers hold some of the prompts
    expect(nonZero).toBeGreaterThan(10);
  });

  it('a policy without an index: false and all zeros; release cost is the whole prompt', () => {
    const p: Policy = { name: 'none', select: (w) => ({ worker: w[0], branch: 'x' }) };
    const out = [5, 5];
    expect(cachedTokensEach(p, ws, textCall(0, 0), out)).toBe(false);
    expect(out).toEqual(new Array(ws.length).fill(0));
    expect(releaseCost(p, ws, info({ promptTokens: 777 }))).toBe(777);
  });

  it.each(cases.filter((c) => c[0] !== 'ctxgate, block hashes'))(
    '%s: release cost reads the prompt once for 64 workers, not once per worker',
    (_name, make, call) => {
      const p = make();
      const many = workers(64);
      const base = call(1, 3);
      p.select(many, base);
      // count reads of the prompt itself (its text or its token ids): each read is a pass over it
      let reads = 0;
      const counted = { ...base } as RouteInfo;
      for (const k of ['text', 'promptTokenIds'] as const) {
        const v = base[k];
        if (v === undefined) continue;
        Object.defineProperty(counted, k, {
          get: () => {
            reads++;
            return v;
          },
          enumerable: true,
        });
      }
      releaseCost(p, many, counted);
      expect(reads).toBeGreaterThan(0);
      expect(reads).toBeLessThanOrEqual(3);
    },
  );
});

describe('leader', () => {
  it('the top worker and its lead over the runner-up', () => {
    expect(leader([0, 0, 0])).toEqual({ index: -1, lead: 0 });
    expect(leader([10, 40, 25])).toEqual({ index: 1, lead: 15 });
    expect(leader([40, 40])).toEqual({ index: 0, lead: 0 });
    expect(leader([5, 30, 30, 1])).toEqual({ index: 1, lead: 0 });
  });
});
