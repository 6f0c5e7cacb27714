// withGuessedEntries: a baseline that only reads the precise index gets a guessed worker's entry
// kept for it (the routed chain, bounded by the capacity guess() set); precise workers' entries
// stay exactly what the events said.
import { describe, expect, it } from 'vitest';
import { KvEventIndex } from '../../kvplanner/kv-events/event-index.ts';
import { withGuessedEntries } from '../../kvplanner/kv-events/guessed-entries.ts';
import { CtxgatePolicy } from '../../kvplanner/policies/ctxgate.ts';
import { DynamoKvPolicy } from '../../kvplanner/policies/dynamo-kv.ts';
import { SmgCacheAwarePolicy } from '../../kvplanner/policies/smg-cache-aware.ts';
import { info, workers } from './fixtures.ts';

describe('withGuessedEntries', () => {
  it('writes the routed chain into a guessed worker’s entry only, and the next call follows it', () => {
    const ev = new KvEventIndex();
    ev.guess('w1', 4);
    const p = withGuessedEntries(new DynamoKvPolicy({ kv_index: ev, block_size: 16 }), ev, 16);
    expect(p.name).toBe('dynamo_kv');
    // w0 (precise) holds nothing, w1 (guessed) nothing yet: w1 has no queued work against it either
    const ws = workers(2);
    ws[0].queuedPrefillTokens = 1000;
    const req = () => info({ blockHashes: ['a', 'b', 'c'], promptTokens: 60 });
    const first = p.select(ws, req())!;
    expect(first.worker.id).toBe('w1');
    expect(ev.index.size('w1')).toBe(3);
    ws[0].queuedPrefillTokens = 0;
    const second = p.select(ws, req())!;
    expect(second.worker.id).toBe('w1');
    expect(second.predictedCachedTokens).toBe(48);
    // bounded by the guessed capacity (4 blocks)
    p.select(ws, info({ blockHashes: ['x', 'y', 'z'], promptTokens: 60 }));
    expect(ev.index.size('w1')).toBeLessThanOrEqual(4);
  });

  it('never writes a precise worker’s entry', () => {
    const ev = new KvEventIndex();
    const p = withGuessedEntries(new DynamoKvPolicy({ kv_index: ev, block_size: 16 }), ev, 16);
    const c = p.select(workers(2), info({ blockHashes: ['a', 'b'], promptTokens: 40 }))!;
    expect(c).not.toBeNull();
    expect(ev.index.size('w0') + ev.index.size('w1')).toBe(0);
  });

  it('forgetting a worker (flushed, ejected) clears its guessed entry and never a precise one', () => {
    const ev = new KvEventIndex();
    ev.precise('w0', ['p', 'q']);
    ev.guess('w1', 8);
    const base = new SmgCacheAwarePolicy({ kv_index: ev, block_size: 16 });
    const p = withGuessedEntries(base, ev, 16);
    const ws = workers(2);
    ws[0].inFlight = 5; // the guessed worker takes the call
    expect(p.select(ws, info({ blockHashes: ['a', 'b', 'c'], promptTokens: 60 }))!.worker.id).toBe('w1');
    expect(ev.index.size('w1')).toBe(3);
    expect(p.forgetWorker).toBeTypeOf('function');
    p.forgetWorker!('w1');
    expect(ev.index.size('w1')).toBe(0); // the wrapper did not pass forgetWorker on before
    p.forgetWorker!('w0');
    expect(ev.index.size('w0')).toBe(2); // the engine's word: its KV events say when it is gone
  });

  it('ctxgate keeps a precise worker’s entry when it forgets the worker', () => {
    const ev = new KvEventIndex();
    ev.precise('w0', ['p', 'q']);
    const p = new CtxgatePolicy({ kv_index: ev, index_stride: 1, block_size: 16 });
    p.forgetWorker('w0');
    expect(ev.index.size('w0')).toBe(2);
  });
});
