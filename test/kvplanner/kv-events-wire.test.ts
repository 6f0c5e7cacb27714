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

  it('a block whose parent was never seen, another medium, or token ids that do not fit are not indexed', () => {
    const m = new EngineChainMap(16);
    expect(m.apply(stored(['x'], 'never-seen', 0)).stored).toBeUndefined();
    expect(m.stats.unmapped).toBe(1);
    expect(m.apply({ ...stored(['y'], null, 0), blockSize: 32, tokenIds: ids.slice(0, 40) }).stored).toBeUndefined();
    expect(m.apply({ ...stored(['z'], null, 0), medium: 'CPU' }).stored).toBeUndefined();
    expect(m.stats.skipped).toBe(2);
    expect(m.apply({ type: 'AllBlocksCleared' }).cleared).toBe(true);
  });

  /** SGLang's radix cache: one BlockStored per page (one hash, the parent page's hash). */
  const pages = (size: number, tokens: number[], prefix = 'p', parent: string | null = null) =>
    Array.from({ length: Math.ceil(tokens.length / size) }, (_, i) => ({
      type: 'BlockStored' as const,
      blockHashes: [`${prefix}${i}`],
      parentBlockHash: i === 0 ? parent : `${prefix}${i - 1}`,
      tokenIds: tokens.slice(i * size, (i + 1) * size),
      blockSize: Math.min(size, tokens.length - i * size),
      medium: 'GPU',
      loraName: null,
      cacheSalt: null,
      extraKeys: null,
      groupIdx: null,
    }));

  it.each([1, 4, 5, 16, 32, 48])(
    'pages of %i tokens merge or split into the gateway’s 16-token chain (SGLang page_size ≠ block_size)',
    (size) => {
      const m = new EngineChainMap(16);
      const got = pages(size, ids).flatMap((ev) => m.apply(ev).stored ?? []);
      expect(got).toEqual(blockHashes(ids, 16));
      expect([...m.blocks()].sort()).toEqual([...blockHashes(ids, 16)].sort());
    },
  );

  it('a radix branch continues from its parent page mid-block; removing a leaf page drops the blocks it completed', () => {
    const m = new EngineChainMap(16);
    // a 24-token node in pages of 1, then two branches of 28 tokens from its end (mid-block)
    const trunk = ids.slice(0, 24);
    m.apply(pages(1, trunk, 't').at(-1)!); // its parent was never seen: unmapped
    expect(m.stats.unmapped).toBe(1);
    for (const ev of pages(1, trunk, 't')) m.apply(ev);
    const a = [...trunk, ...Array.from({ length: 28 }, (_, i) => 5000 + i)];
    const b = [...trunk, ...Array.from({ length: 28 }, (_, i) => 7000 + i)];
    const branch = (tokens: number[], name: string) =>
      pages(4, tokens.slice(24), name, 't23').flatMap((ev) => m.apply(ev).stored ?? []);
    const sa = branch(a, 'a');
    const sb = branch(b, 'b');
    expect(sa).toEqual(blockHashes(a, 16).slice(1));
    expect(sb).toEqual(blockHashes(b, 16).slice(1));
    expect(new Set(m.blocks()).size).toBe(5); // 1 shared + 2 per branch
    // evicting branch b's last node (pages b4..b6) drops its third block only (completed in b5)
    const removed = m.apply({ type: 'BlockRemoved', blockHashes: ['b4', 'b5', 'b6'], medium: null, groupIdx: null });
    expect(removed.removed).toEqual([blockHashes(b, 16)[2]]);
    expect(new Set(m.blocks()).size).toBe(4);
  });

  it('the bound counts tokens: pages of 1 token may hold maxBlocks blocks’ worth', () => {
    const m = new EngineChainMap(16, 2);
    const got = pages(1, ids).flatMap((ev) => m.apply(ev).stored ?? []);
    expect(got.length).toBe(4);
    expect(m.size).toBe(32);
    expect([...m.blocks()]).toEqual(blockHashes(ids, 16).slice(2));
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
