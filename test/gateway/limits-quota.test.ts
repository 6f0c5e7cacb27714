// Pure limit helpers: TenantQuota (per-tenant session LRU + byte cap), BudgetGuard caching and
// day rollover and jsonDepth.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BudgetGuard, jsonDepth, TenantQuota } from '../../gateway/limits/index.ts';
import type { GatewayError } from '../../middleware/errors.ts';

describe('TenantQuota', () => {
  it('evicts the least recently used session of the same tenant past maxSessions', () => {
    const q = new TenantQuota({ maxSessions: 2, maxBytes: 1000 });
    expect(q.touch('a', 's1', 10)).toEqual([]);
    expect(q.touch('a', 's2', 10)).toEqual([]);
    q.touch('a', 's1', 10); // s1 is now the most recent
    expect(q.touch('a', 's3', 10)).toEqual([{ tenant: 'a', sessionId: 's2' }]);
    // Another tenant's sessions never count against tenant a.
    expect(q.touch('b', 's1', 10)).toEqual([]);
    expect(q.usage('a')).toEqual({ sessions: 2, bytes: 20 });
    expect(q.has('b', 's1')).toBe(true);
  });

  it('evicts oldest sessions past maxBytes, and the session itself when it alone is too big', () => {
    const q = new TenantQuota({ maxSessions: 100, maxBytes: 100 });
    q.touch('a', 's1', 40);
    q.touch('a', 's2', 40);
    expect(q.touch('a', 's3', 40)).toEqual([{ tenant: 'a', sessionId: 's1' }]);
    expect(q.usage('a').bytes).toBe(80);
    // A session growing updates its size rather than counting twice.
    expect(q.touch('a', 's3', 60)).toEqual([]);
    expect(q.usage('a')).toEqual({ sessions: 2, bytes: 100 });
    expect(q.touch('a', 's3', 61)).toEqual([{ tenant: 'a', sessionId: 's2' }]);
    expect(q.usage('a')).toEqual({ sessions: 1, bytes: 61 });
    expect(q.touch('a', 'huge', 500)).toEqual([
      { tenant: 'a', sessionId: 's3' },
      { tenant: 'a', sessionId: 'huge' },
    ]);
    expect(q.usage('a')).toEqual({ sessions: 0, bytes: 0 });
  });

  it('stays bounded under a flood of attacker-chosen session ids and tenants', () => {
    const q = new TenantQuota({ maxSessions: 50, maxBytes: 1 << 20, maxTenants: 10 });
    let evicted = 0;
    for (let i = 0; i < 20_000; i++) evicted += q.touch(`t${i % 37}`, `sess-${i}`, 100).length;
    expect(q.tenantCount).toBeLessThanOrEqual(10);
    for (let t = 0; t < 37; t++) expect(q.usage(`t${t}`).sessions).toBeLessThanOrEqual(50);
    expect(evicted).toBeGreaterThan(20_000 - 10 * 50 - 1);
    q.remove('t36', 'sess-19995');
  });
});

describe('BudgetGuard', () => {
  it('caches spend for cacheMs, shares concurrent lookups and starts over each UTC day', async () => {
    let now = Date.UTC(2025, 0, 1, 23, 59, 50);
    let spend = 5;
    const calls: number[] = [];
    const g = new BudgetGuard({
      budgets: [{ tenant: 't', usd_per_day: 5 }],
      cacheMs: 1000,
      now: () => now,
      spend: async (_t, since) => {
        calls.push(since);
        return spend;
      },
    });
    const results = await Promise.allSettled([g.check('t'), g.check('t'), g.check('t')]);
    expect(results.every((r) => r.status === 'rejected' && (r.reason as GatewayError).code === 'budget_exceeded')).toBe(
      true,
    );
    expect(calls).toHaveLength(1);
    const err = (results[0] as PromiseRejectedResult).reason as GatewayError;
    expect(Number(err.headers['retry-after'])).toBe(10);
    spend = 0;
    await expect(g.check('t')).rejects.toThrow(/daily budget/); // still cached
    now += 20_000; // past midnight: a new day and a new lookup
    await expect(g.check('t')).resolves.toBeUndefined();
    expect(calls).toEqual([Date.UTC(2025, 0, 1), Date.UTC(2025, 0, 2)]);
    await expect(g.check('unbudgeted')).resolves.toBeUndefined();
  });

  it('lets calls through when the spend lookup fails', async () => {
    const errors: unknown[] = [];
    const g = new BudgetGuard({
      budgets: [{ tenant: 't', usd_per_day: 0 }],
      spend: () => Promise.reject(new Error('ledger down')),
      onLookupError: (e) => errors.push(e),
    });
    await expect(g.check('t')).resolves.toBeUndefined();
    expect(errors).toHaveLength(1);
  });
});

describe('jsonDepth', () => {
  it('counts nesting outside strings, escapes included', () => {
    expect(jsonDepth(Buffer.from('{"a":[1,{"b":[]}]}'))).toBe(4);
    expect(jsonDepth(Buffer.from('{"a":"[[[[\\"[[["}'))).toBe(1);
    expect(jsonDepth(Buffer.from('[[[[[[[[[['), 3)).toBe(4);
  });

  /** Nesting of a parsed value, without recursion. */
  function depthOf(v: unknown): number {
    let max = 0;
    const todo: [unknown, number][] = [[v, 0]];
    for (let e = todo.pop(); e; e = todo.pop()) {
      const [x, d] = e;
      if (x === null || typeof x !== 'object') continue;
      max = Math.max(max, d + 1);
      for (const c of Object.values(x)) todo.push([c, d + 1]);
    }
    return max;
  }

  it("equals the parsed document's depth on strings long or short, dense with quotes, backslashes and brackets", () => {
    // Long strings full of escaped quotes and backslash runs take the jump path (memchr from
    // quote to quote); short ones the byte steps. Characters picked to make escapes dense.
    const text = fc
      .array(fc.constantFrom('"', '\\', '\\\\', '[', ']', '{', '}', 'a', 'bc', ' ', '\n', 'é', '\u2028'), {
        maxLength: 200,
        size: 'max',
      })
      .map((xs) => xs.join(''));
    const value = fc.letrec((tie) => ({
      v: fc.oneof(
        { depthSize: 'small', withCrossShrink: true },
        text,
        fc.integer(),
        fc.array(tie('v'), { maxLength: 4 }),
        fc.dictionary(text, tie('v'), { maxKeys: 3 }),
      ),
    })).v;
    fc.assert(
      fc.property(value, (v) => {
        const buf = Buffer.from(JSON.stringify(v));
        expect(jsonDepth(buf)).toBe(depthOf(v));
      }),
      { seed: 20261130, numRuns: 2000 },
    );
  });
});
