// KV event batches as vLLM encodes them (vllm/distributed/kv_events.py: KVEventBatch array_like,
// events tagged maps; the older layout, also SGLang's, events as arrays with the tag first), and
// the mapping of an engine's opaque block hashes onto the gateway's own chain: the chain the
// middleware computes for a prompt under a tenant's cache salt must be exactly what the index gets.
import { Encoder } from '@msgpack/msgpack';
import { describe, expect, it } from 'vitest';
import { blockHashes, hashSeed } from '../../kvplanner/block-hash.ts';
import { EngineChainMap, saltOf } from '../../kvplanner/kv-events/chain-map.ts';
import { decodeBatch, encodeBatch, readSeq, seqBytes } from '../../kvplanner/kv-events/wire.ts';

const enc = new Encoder({ useBigInt64: true });
const ids = Array.from({ length: 64 }, (_, i) => 1000 + i);

describe('KV event wire format', () => {
  it('round-trips the current vLLM layout: [ts, [{type, …}], dp_rank]', () => {
    const big = (1n << 63n) + 5n; // an unsigned 64-bit hash above i64::MAX
    const payload = encodeBatch(1700000000.5, [
      {
        type: 'BlockStored',
        blockHashes: [big, 7n],
        parentBlockHash: null,
        tokenIds: ids.slice(0, 32),
        blockSize: 16,
        extraKeys: [['salt-a'], null],
      },
      { type: 'BlockRemoved', blockHashes: [7n] },
      { type: 'AllBlocksCleared' },
    ]);
    const b = decodeBatch(payload);
    expect(b.ts).toBe(1700000000.5);
    expect(b.dataParallelRank).toBe(0);
    expect(b.events[0]).toMatchObject({
      type: 'BlockStored',
      blockHashes: [big.toString(), '7'],
      parentBlockHash: null,
      blockSize: 16,
      medium: 'GPU',
      groupIdx: 0,
      extraKeys: [['salt-a'], null],
    });
    expect(b.events[1]).toEqual({ type: 'BlockRemoved', blockHashes: ['7'], medium: 'GPU', groupIdx: 0 });
    expect(b.events[2]).toEqual({ type: 'AllBlocksCleared' });
  });

  it('decodes the legacy array layout, digest-byte hashes and unknown event types', () => {
    const digest = new Uint8Array([0xab, 0xcd, 0xef]);
    const payload = enc.encode([
      12.25,
      [
        ['BlockStored', [3, digest], 9, ids.slice(0, 32), 16, null, 'GPU'],
        ['BlockRemoved', [3], 'GPU'],
        ['BlockMigrated', [3], 'peer'],
        ['AllBlocksCleared'],
      ],
      2,
    ]);
    const b = decodeBatch(payload);
    expect(b.dataParallelRank).toBe(2);
    expect(b.unknown).toBe(1);
    expect(b.events.map((e) => e.type)).toEqual(['BlockStored', 'BlockRemoved', 'AllBlocksCleared']);
    expect(b.events[0]).toMatchObject({ blockHashes: ['3', 'xabcdef'], parentBlockHash: '9', medium: 'GPU' });
  });

  it('rejects a payload that is not a batch, and malformed hashes', () => {
    expect(() => decodeBatch(enc.encode({ hello: 1 }))).toThrow(/no events array/);
    expect(() => decodeBatch(enc.encode([1, [['BlockRemoved', 'nope']]]))).toThrow(/block_hashes/);
  });

  it('sequence frames are 8-byte big-endian, -1 ends a replay', () => {
    expect([...seqBytes(258n)]).toEqual([0, 0, 0, 0, 0, 0, 1, 2]);
    expect(readSeq(seqBytes(-1n))).toBe(-1n);
    expect(() => readSeq(new Uint8Array(4))).toThrow(/8 bytes/);
  });
});

describe('engine hashes onto the gateway chain', () => {
  const stored = (
    hashes: string[],
    parent: string | null,
    from: number,
    extra: Array<unknown[] | null> | null = null,
  ) => ({
    type: 'BlockStored' as const,
    blockHashes: hashes,
    parentBlockHash: parent,
    tokenIds: ids.slice(from, from + hashes.length * 16),
    blockSize: 16,
    medium: 'GPU',
    loraName: null,
    cacheSalt: null,
    extraKeys: extra,
    groupIdx: 0,
  });

  it('a salted chain stored in two steps maps to the middleware’s chain for that salt', () => {
    const m = new EngineChainMap(16);
    const first = m.apply(stored(['e1', 'e2'], null, 0, [['tenant-salt'], null])).stored!;
    const rest = m.apply(stored(['e3', 'e4'], 'e2', 32)).stored!;
    expect([...first, ...rest]).toEqual(blockHashes(ids, 16, hashSeed('tenant-salt')));
    // another salt, or none, is another chain
    expect(first[0]).not.toBe(blockHashes(ids, 16, hashSeed())[0]);
    expect(
      m.apply({ type: 'BlockRemoved', blockHashes: ['e4', 'unknown'], medium: null, groupIdx: null }).removed,
    ).toEqual([rest[1]]);
    expect(m.size).toBe(3);
  });

  it('a block whose parent was never seen, another block size, or another medium is not indexed', () => {
    const m = new EngineChainMap(16);
    expect(m.apply(stored(['x'], 'never-seen', 0)).stored).toBeUndefined();
    expect(m.stats.unmapped).toBe(1);
    expect(m.apply({ ...stored(['y'], null, 0), blockSize: 32, tokenIds: ids.slice(0, 32) }).stored).toBeUndefined();
    expect(m.apply({ ...stored(['z'], null, 0), medium: 'CPU' }).stored).toBeUndefined();
    expect(m.stats.skipped).toBe(2);
    expect(m.apply({ type: 'AllBlocksCleared' }).cleared).toBe(true);
  });

  it('holds at most maxBlocks: past that the oldest-stored block is dropped as though removed', () => {
    const m = new EngineChainMap(16, 2);
    const r = m.apply(stored(['e1', 'e2', 'e3'], null, 0));
    expect(m.size).toBe(2);
    expect(r.removed).toEqual([r.stored![0]]);
  });

  it('the salt is the last string of block 0’s extra keys that is not the LoRA name', () => {
    expect(saltOf([['adapter', ['mm', 0], 'salt-1']], 'adapter')).toBe('salt-1');
    expect(saltOf([['adapter']], 'adapter')).toBeUndefined();
    expect(saltOf([null], null)).toBeUndefined();
    expect(saltOf(null, null)).toBeUndefined();
  });
});
