// Receipts count as metrics only as their stages declare (middleware/chain.ts RECEIPT_METRICS):
// the gateway holds no list of stage/action pairs of its own.
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { countReceipts, createMetrics } from '../../gateway/metrics.ts';
import { RECEIPT_METRICS } from '../../middleware/chain.ts';

describe('receipt metrics from stage declarations', () => {
  it('the compaction and ledger stages declare their counters', () => {
    expect(RECEIPT_METRICS.get('ledger\u0000tombstone')?.counter).toBe('tombstones');
    expect(RECEIPT_METRICS.get('compaction\u0000compacted')).toMatchObject({
      counter: 'compactions',
      tokensSaved: true,
    });
    expect(RECEIPT_METRICS.get('volatile\u0000relocate')).toBeUndefined();
  });

  it('counts declared receipts, ignores the rest (bounded outcome label)', async () => {
    const registry = new Registry();
    const m = createMetrics(registry);
    countReceipts(m, 'm', [
      { stage: 'ledger', action: 'tombstone', reason: '' },
      { stage: 'ledger', action: 'tombstone', reason: '' },
      { stage: 'compaction', action: 'compacted', tokens_before: 1000, tokens_after: 400, reason: '' },
      { stage: 'compaction', action: 'made_up', tokens_before: 1000, tokens_after: 0, reason: '' },
      { stage: 'volatile', action: 'relocate', reason: '' },
    ]);
    const text = await registry.metrics();
    expect(text).toContain('ctxgate_tombstones_total{model="m"} 2');
    expect(text).toContain('ctxgate_compactions_total{model="m",outcome="compacted"} 1');
    expect(text).not.toContain('made_up');
    expect(text).toContain('ctxgate_compaction_tokens_saved_total{model="m"} 600');
  });
});
