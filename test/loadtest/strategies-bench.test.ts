import { describe, expect, it } from 'vitest';
import { strategiesCommand } from '../../loadtest/bench-strategies.ts';
import type { StrategyResult } from '../../loadtest/strategies/evaluate.ts';
import { TokenModel } from '../../loadtest/strategies/token-model.ts';

const charEncoder = { encode: (t: string) => [...t].map((c) => c.charCodeAt(0)) };

describe('strategy token model', () => {
  it('caches the longest common token prefix, floored to blocks', () => {
    const tm = new TokenModel(charEncoder, 4);
    const a = tm.sequence([
      { role: 'system', content: 'abcdefgh' },
      { role: 'user', content: 'xyz' },
    ]);
    const b = tm.sequence([
      { role: 'system', content: 'abcdefgh' },
      { role: 'user', content: 'xyQ' },
    ]);
    const sys = 'system\nabcdefgh\n\n\n'.length + 4; // message ids + per-message overhead
    expect(tm.cachedTokens(undefined, a)).toBe(0);
    expect(tm.cachedTokens(a, a)).toBe(Math.floor(TokenModel.total(a) / 4) * 4);
    expect(tm.cachedTokens(a, b)).toBe(Math.floor((sys + 'user\nxy'.length) / 4) * 4);
  });
});

describe('bench strategies', () => {
  it('compares the four strategies over the same synthetic sessions under one budget', async () => {
    let out = '';
    const code = await strategiesCommand(['--sessions', '3', '--seed', '5', '--budget', '8000', '--json'], {
      out: (s) => (out += s),
      err: (s) => (out += s),
    });
    expect(code).toBe(0);
    const { strategies } = JSON.parse(out) as { strategies: StrategyResult[] };
    const by = Object.fromEntries(strategies.map((s) => [s.strategy, s]));
    expect(Object.keys(by)).toEqual(['full-log', 'sliding-window', 'observation-masking', 'ctxgate']);
    const calls = by['full-log'].calls;
    for (const s of strategies) expect(s.calls).toBe(calls);
    // the full log is the raw history
    expect(by['full-log'].compression_ratio).toBe(1);
    expect(by['full-log'].verbatim_retention).toBe(1);
    expect(by['full-log'].compactions).toBe(0);
    expect(by['full-log'].over_budget_calls).toBeGreaterThan(0);
    expect(by['full-log'].stale_exposure_calls).toBeGreaterThan(0);
    // a sliding window fits the budget but loses the task's constraints once it slides past them
    expect(by['sliding-window'].over_budget_calls).toBe(0);
    expect(by['sliding-window'].compactions).toBeGreaterThan(0);
    expect(by['sliding-window'].constraint_retention).toBeLessThan(1);
    expect(by['sliding-window'].hit_rate).toBeLessThan(by['full-log'].hit_rate);
    // masking drops old observations' verbatim content
    expect(by['observation-masking'].verbatim_retention).toBeLessThan(1);
    // ctxgate: within budget, root kept, superseded reads tombstoned, verbatim set kept
    const c = by.ctxgate;
    expect(c.over_budget_calls).toBe(0);
    expect(c.compression_ratio).toBeGreaterThan(1);
    expect(c.compactions).toBeGreaterThan(0);
    expect(c.constraint_retention).toBe(1);
    expect(c.stale_exposure_calls).toBe(0);
    expect(c.verbatim_retention).toBeGreaterThan(by['observation-masking'].verbatim_retention);
    expect(c.prefill_tokens).toBeLessThan(by['sliding-window'].prefill_tokens);
    for (const s of strategies) {
      expect(s.prefill_tokens).toBe(s.staged_tokens - s.cached_tokens);
      expect(s.hit_rate).toBeCloseTo(s.cached_tokens / s.staged_tokens, 3);
    }
  });
});
