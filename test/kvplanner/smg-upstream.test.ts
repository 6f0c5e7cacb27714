// smg_cache_aware against the SGLang model gateway's own unit tests (lightseekorg/smg
// model_gateway/src/policies/cache_aware.rs, mod tests), case by case, and the least-loaded
// tie-break smg #1714 added: (load, processed_requests, idx). The event-driven cases use a real
// KvEventIndex with smg's test block size 4; upstream hashes token blocks, here the keys are given.
import { describe, expect, it } from 'vitest';
import { KvEventIndex } from '../../kvplanner/kv-events/event-index.ts';
import { SMG_DEFAULTS, SmgCacheAwarePolicy } from '../../kvplanner/policies/smg-cache-aware.ts';
import { info, workers } from './fixtures.ts';

/** The chain keys of `blocks` full blocks, as the gateway passes them (b0, b1, …). */
const chain = (blocks: number, tag = 'b') => Array.from({ length: blocks }, (_, i) => `${tag}${i}`);

function eventDriven(held: Record<string, string[]>) {
  const ev = new KvEventIndex();
  for (const [w, keys] of Object.entries(held)) ev.blockStored(w, keys);
  return new SmgCacheAwarePolicy({ kv_index: ev, block_size: 4, eviction_interval_secs: 0 });
}

describe("model_gateway/src/main.rs: the gateway binary's routing-policy defaults", () => {
  it('--cache-threshold 0.3, --balance-abs-threshold 64, --balance-rel-threshold 1.5, eviction 120 s, tree 2^26, block 16', () => {
    expect(SMG_DEFAULTS).toEqual({
      cache_threshold: 0.3,
      balance_abs_threshold: 64,
      balance_rel_threshold: 1.5,
      eviction_interval_secs: 120,
      max_tree_size: 67_108_864,
      block_size: 16,
    });
  });
});

// docs/concepts/routing/cache-aware.md "Imbalance Detection": imbalanced when BOTH
// (max − min) > balance_abs_threshold (64) AND max > balance_rel_threshold (1.5) × min
describe('docs: Imbalance Detection with the defaults (64, 1.5)', () => {
  it.each([
    [65, 0, 'balance'], // 65 > 64 and 65 > 0
    [64, 0, 'prefix_match'], // 64 is not > 64
    [300, 190, 'balance'], // 110 > 64 and 300 > 285
    [300, 210, 'prefix_match'], // 90 > 64 but 300 is not > 315
  ])('loads %i vs %i → %s', (busy, idle, branch) => {
    const p = new SmgCacheAwarePolicy({ eviction_interval_secs: 0 });
    const ws = workers(2);
    const text = 'a shared prefix long enough to match';
    p.select(ws, info({ text })); // w0 (both idle): its tree now holds the text
    ws[0].inFlight = busy;
    ws[1].inFlight = idle;
    const c = p.select(ws, info({ text }))!;
    expect(c.branch).toBe(branch);
    expect(c.worker.id).toBe(branch === 'balance' ? 'w1' : 'w0');
  });
});

describe('cache_aware.rs score_overlap / select_worker_event_driven tests', () => {
  it('test_score_overlap_selects_best_match / test_event_driven_overlap_selects_cached_worker', () => {
    const p = eventDriven({ w0: chain(4) });
    const c = p.select(workers(2), info({ blockHashes: chain(4), promptTokens: 16 }))!;
    expect(c).toMatchObject({ branch: 'overlap', worker: { id: 'w0' }, predictedCachedTokens: 16 });
  });

  it('test_score_overlap_no_match_returns_none / test_event_driven_no_overlap_uses_min_load', () => {
    const p = eventDriven({ w0: chain(1) });
    const ws = workers(2);
    ws[0].inFlight = 3;
    const c = p.select(ws, info({ blockHashes: chain(1, 'x'), promptTokens: 4 }))!;
    expect(c).toMatchObject({ branch: 'min_load', worker: { id: 'w1' } });
  });

  it('test_event_driven_short_request_uses_min_load: fewer tokens than a block → no blocks → min load', () => {
    const p = eventDriven({ w0: chain(1) });
    const ws = workers(2);
    ws[0].inFlight = 3;
    expect(p.select(ws, info({ blockHashes: [], promptTokens: 3 }))!).toMatchObject({
      branch: 'min_load',
      worker: { id: 'w1' },
    });
  });

  it('test_score_overlap_load_tiebreak: equal overlap → the lower load', () => {
    const p = eventDriven({ w0: chain(1), w1: chain(1) });
    const ws = workers(2);
    ws[0].inFlight = 10;
    expect(p.select(ws, info({ blockHashes: chain(1), promptTokens: 4 }))!.worker.id).toBe('w1');
  });

  it('test_score_overlap_tree_size_tiebreak: equal overlap and load → the smaller tree', () => {
    const p = eventDriven({ w0: chain(1), w1: chain(2) });
    expect(p.select(workers(2), info({ blockHashes: chain(1), promptTokens: 4 }))!.worker.id).toBe('w0');
  });

  it('test_score_overlap_partial_match: 4 blocks beat 2', () => {
    const p = eventDriven({ w0: chain(4), w1: chain(2) });
    const c = p.select(workers(2), info({ blockHashes: chain(4), promptTokens: 16 }))!;
    expect(c.worker.id).toBe('w0');
    expect(c.predictedCachedTokens).toBe(16);
  });

  it('a complete tie (overlap, load, tree) goes to the later worker, as max_by_key keeps the last maximum', () => {
    const p = eventDriven({ w0: chain(2), w1: chain(2), w2: chain(2) });
    expect(p.select(workers(3), info({ blockHashes: chain(2), promptTokens: 8 }))!.worker.id).toBe('w2');
  });
});

describe('#1714: least loaded is the lowest (load, processed_requests, idx)', () => {
  // Every worker idle (decode outpaces prefill): before #1714 each miss went to the first worker;
  // now the one that was sent the fewest requests takes it, so misses rotate.
  it('misses on idle workers rotate instead of piling onto the first', () => {
    const p = new SmgCacheAwarePolicy({ eviction_interval_secs: 0 });
    const ws = workers(3);
    const picks = ['alpha', 'bravo', 'charlie', 'delta', 'echo', 'foxtrot'].map(
      (t) => p.select(ws, info({ text: `${t} ${'x'.repeat(20)}`.replace(/x/g, t[0]) }))!,
    );
    expect(picks.map((c) => c.branch)).toEqual(new Array(6).fill('min_load'));
    expect(picks.map((c) => c.worker.id)).toEqual(['w0', 'w1', 'w2', 'w0', 'w1', 'w2']);
  });

  it('cache hits count as processed too; load still comes first', () => {
    const p = new SmgCacheAwarePolicy({ eviction_interval_secs: 0 });
    const ws = workers(2);
    const text = 'You are a coding agent. '.repeat(4);
    p.select(ws, info({ text })); // w0 (a miss: all equal)
    p.select(ws, info({ text })); // w0 again (a hit): processed w0 = 2, w1 = 0
    expect(p.select(ws, info({ text: 'unrelated prompt' }))!.worker.id).toBe('w1');
    ws[1].inFlight = 1; // w1 busier: load decides before processed
    expect(p.select(ws, info({ text: 'another unrelated one' }))!.worker.id).toBe('w0');
  });

  it('the balance branch uses the same order', () => {
    const p = new SmgCacheAwarePolicy({
      balance_abs_threshold: 2,
      balance_rel_threshold: 1.5,
      eviction_interval_secs: 0,
    });
    const ws = workers(3);
    p.select([ws[1]], info({ text: 'warm w1' })); // w1 processed 1
    ws[0].inFlight = 10; // imbalanced: w1 and w2 tie on load 0; w2 has processed fewer
    expect(p.select(ws, info({ text: 'warm w1' }))!).toMatchObject({ branch: 'balance', worker: { id: 'w2' } });
  });
});
