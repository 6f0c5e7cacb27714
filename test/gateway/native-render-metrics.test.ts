// Native chat-template renders are visible on /metrics: counted at scrape time, with the
// cross-checks against the interpreter and any difference found.
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { createMetrics } from '../../gateway/metrics.ts';
import { loadTokenizer } from '../../middleware/tokens/registry.ts';

describe('ctxgate_native_renders_total', () => {
  it('counts native renders, their cross-checks and differences', async () => {
    const registry = new Registry();
    createMetrics(registry);
    const value = async (outcome: string): Promise<number> => {
      const m = (await registry.getMetricsAsJSON()).find((x) => x.name === 'ctxgate_native_renders_total');
      return Number(m?.values.find((v) => v.labels.outcome === outcome)?.value ?? Number.NaN);
    };
    const before = await value('rendered');
    const tok = await loadTokenizer('qwen3');
    for (let i = 0; i < 5; i++) tok.renderChat([{ role: 'user', content: `hello ${i}` }]);
    expect(await value('rendered')).toBe(before + 5);
    expect(await value('checked')).toBeGreaterThan(0);
    expect(await value('mismatched')).toBe(0);
  });
});
