import { describe, expect, it } from 'vitest';
import { createPolicy, POLICY_BRANCHES, POLICY_NAMES } from '../../kvplanner/policy-registry.ts';
import { info, tokens, workers } from './fixtures.ts';

describe('policy registry', () => {
  it('registers every policy with its branch set', () => {
    expect(POLICY_NAMES().sort()).toEqual([
      'ctxgate',
      'dynamo_kv',
      'least_load',
      'llmd_precise',
      'prefix_hash',
      'round_robin',
      'session_hash',
      'sglang_cache_aware',
      'smg_cache_aware',
    ]);
    for (const n of POLICY_NAMES()) {
      const p = createPolicy(n);
      expect(p.name).toBe(n);
      const c = p.select(workers(3), info({ sessionId: 's', text: 'hello world', promptTokenIds: tokens(32, 1, 32) }));
      expect(c).not.toBeNull();
      expect(POLICY_BRANCHES[n]).toContain(c!.branch);
      expect(p.select([], info())).toBeNull();
    }
    expect(() => createPolicy('nope')).toThrow(/unknown routing policy/);
    expect(() => createPolicy('ctxgate', { epsilon: 'x' })).toThrow(/epsilon/);
  });
});

describe('least_load', () => {
  it('picks the least outstanding work and rotates ties', () => {
    const p = createPolicy('least_load');
    const ws = workers(3);
    ws[0].queuedPrefillTokens = 5000;
    ws[1].inFlight = 2; // 1024 token-equivalents
    expect(p.select(ws, info())!.worker.id).toBe('w2');
    const even = workers(3);
    const seen = new Set([0, 1, 2, 3, 4, 5].map(() => p.select(even, info())!.worker.id));
    expect(seen.size).toBe(3);
  });
});

describe('session_hash', () => {
  it('keeps a session on its home worker and overflows under bounded load', () => {
    const p = createPolicy('session_hash', { epsilon: 0.25 });
    const ws = workers(4);
    const home = p.select(ws, info({ sessionId: 'abc' }))!;
    expect(home.branch).toBe('home');
    for (let i = 0; i < 5; i++) expect(p.select(ws, info({ sessionId: 'abc' }))!.worker.id).toBe(home.worker.id);
    // home at 3 in flight, total 3, n 4: cap = ceil(1.25·4/4) = 2 → overflow
    home.worker.inFlight = 3;
    const c = p.select(ws, info({ sessionId: 'abc' }))!;
    expect(c.branch).toBe('overflow');
    expect(c.worker.id).not.toBe(home.worker.id);
  });

  it('every worker at its maxInFlight: the least loaded queues it (saturated)', () => {
    const p = createPolicy('session_hash');
    const ws = workers(3, { maxInFlight: 2, inFlight: 2 });
    ws[1].inFlight = 1;
    ws[1].maxInFlight = 1;
    const c = p.select(ws, info({ sessionId: 'x' }))!;
    expect([c.branch, c.worker.id]).toEqual(['saturated', 'w1']);
  });

  it('spreads sessions', () => {
    const p = createPolicy('session_hash');
    const ws = workers(4);
    const ids = new Set(Array.from({ length: 64 }, (_, i) => p.select(ws, info({ sessionId: `s${i}` }))!.worker.id));
    expect(ids.size).toBe(4);
  });
});

describe('prefix_hash', () => {
  it('routes equal first-256-token prefixes together and walks off an overloaded owner', () => {
    const p = createPolicy('prefix_hash');
    const ws = workers(4);
    const a = p.select(ws, info({ promptTokenIds: tokens(300, 1, 50) }))!;
    const b = p.select(ws, info({ promptTokenIds: tokens(300, 2, 80) }))!;
    expect(a.branch).toBe('ring_hit');
    expect(b.worker.id).toBe(a.worker.id);
    a.worker.inFlight = 10; // total 10, avg (11/4)·1.25 = 3.4 < 10
    const c = p.select(ws, info({ promptTokenIds: tokens(300, 3, 10) }))!;
    expect(c.branch).toBe('load_balance_walk');
    expect(c.worker.inFlight).toBe(0);
    expect(p.select(ws, info())!.branch).toBe('fallback_least_load');
  });
});
