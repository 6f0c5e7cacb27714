// A fast-path/library token-id mismatch is visible to operators: ctxgate_tokenizer_fast_encodes_total
// counts it (outcome="mismatched") and the listeners (the gateway's warning) hear of it once per
// tokenizer, with its name and the text's length (never the text).
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { createMetrics } from '../../gateway/metrics.ts';
import { checkedEncoder, type FastMismatch, onFastMismatch } from '../../middleware/tokens/hf-handle.ts';

async function mismatches(registry: Registry): Promise<number> {
  const m = await registry.getSingleMetric('ctxgate_tokenizer_fast_encodes_total')!.get();
  return m.values.find((v) => v.labels.outcome === 'mismatched')?.value ?? 0;
}

describe('fast encode mismatch', () => {
  it('is counted in the metrics module and told once per tokenizer', async () => {
    const registry = new Registry();
    createMetrics(registry);
    const heard: FastMismatch[] = [];
    const stop = onFastMismatch((m) => heard.push(m));
    const before = await mismatches(registry);
    const library = (t: string) => [...t].map((c) => c.charCodeAt(0));
    // a fast path that is right on short texts and wrong on one of 9 characters
    const enc = checkedEncoder(library, (t) => (t.length === 9 ? [0] : library(t)), 'toy');
    expect(enc('abc')).toEqual([97, 98, 99]);
    expect(enc('secret-ab')).toEqual(library('secret-ab')); // the library's ids, not the fast path's
    for (let i = 0; i < 50; i++) enc(`another-${i % 10}`);
    expect(await mismatches(registry)).toBe(before + 1);
    expect(heard).toEqual([{ tokenizer: 'toy', chars: 9, reason: 'differs' }]);
    // one that throws is told as such
    checkedEncoder(
      library,
      () => {
        throw new Error('x');
      },
      'toy2',
    )('hi');
    expect(await mismatches(registry)).toBe(before + 2);
    expect(heard[1]).toEqual({ tokenizer: 'toy2', chars: 2, reason: 'threw' });
    stop();
  });
});
