import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { blockHashes, hashBlock, textBlockHashes } from '../../kvplanner/block-hash.ts';
import { PrefixIndex } from '../../kvplanner/prefix-index.ts';

describe('blockHashes', () => {
  it('hashes full blocks only, as a chain', () => {
    const ids = Array.from({ length: 40 }, (_, i) => i);
    const h = blockHashes(ids, 16);
    expect(h).toHaveLength(2);
    expect(h[0]).toMatch(/^[0-9a-f]{16}$/);
    expect(blockHashes(ids.slice(0, 32), 16)).toEqual(h);
  });

  it('a block hash is sha256(utf8(parent) ‖ ids as uint32 LE), first 8 bytes in hex, for any parent and size', () => {
    const stream = (parent: string, ids: number[]) => {
      const buf = Buffer.alloc(ids.length * 4);
      ids.forEach((id, i) => buf.writeUInt32LE(id >>> 0, i * 4));
      return createHash('sha256').update(parent).update(buf).digest('hex').slice(0, 16);
    };
    for (const parent of ['ctxgate', 'ctxgate\u0000salt é 🙂', 'p'.repeat(3000), ''])
      for (const n of [0, 1, 16, 1500]) {
        const ids = Array.from({ length: n }, (_, i) => (i * 2654435761) >>> 0);
        expect(hashBlock(parent, ids, 0, n), `${parent.length} ${n}`).toBe(stream(parent, ids));
        // a block in the middle of a longer array
        const wide = [7, 8, ...ids, 9];
        expect(hashBlock(parent, wide, 2, 2 + n)).toBe(stream(parent, ids));
      }
  });

  it('a different early token changes every later hash; a later one leaves the earlier', () => {
    const a = Array.from({ length: 64 }, (_, i) => i);
    const b = [...a];
    b[3] = 999;
    const c = [...a];
    c[40] = 999;
    const ha = blockHashes(a, 16);
    const hb = blockHashes(b, 16);
    const hc = blockHashes(c, 16);
    expect(hb.every((x, i) => x !== ha[i])).toBe(true);
    expect(hc.slice(0, 2)).toEqual(ha.slice(0, 2));
    expect(hc[2]).not.toBe(ha[2]);
  });

  it('the seed separates chains (model / adapter)', () => {
    const ids = Array.from({ length: 16 }, (_, i) => i);
    expect(blockHashes(ids, 16, 'a')[0]).not.toBe(blockHashes(ids, 16, 'b')[0]);
    expect(() => blockHashes(ids, 0)).toThrow(/blockSize/);
  });

  it('text chains use 64-char chunks', () => {
    expect(textBlockHashes('x'.repeat(130))).toHaveLength(2);
  });
});

describe('PrefixIndex', () => {
  const chain = (tag: string, n: number): string[] => Array.from({ length: n }, (_, i) => `${tag}${i}`);

  it('matches the held prefix of a chain', () => {
    const idx = new PrefixIndex(1000);
    idx.insert('a', chain('x', 10));
    expect(idx.matchLength('a', chain('x', 10))).toBe(10);
    expect(idx.matchLength('a', [...chain('x', 6), 'y6', 'y7'])).toBe(6);
    expect(idx.matchLength('b', chain('x', 10))).toBe(0);
    expect(idx.matchLength('a', ['z', ...chain('x', 3)])).toBe(0);
  });

  it('evicts least recently used chains first and tails before roots', () => {
    const idx = new PrefixIndex(12);
    idx.insert('a', chain('p', 8));
    idx.insert('a', chain('q', 8)); // 16 > 12: 4 blocks of p go, tail first
    expect(idx.size('a')).toBe(12);
    expect(idx.matchLength('a', chain('p', 8))).toBe(4);
    expect(idx.matchLength('a', chain('q', 8))).toBe(8);
    idx.insert('a', chain('p', 4)); // touch p's root, then q must lose blocks next
    idx.insert('a', chain('r', 4));
    expect(idx.matchLength('a', chain('p', 8))).toBe(4);
    expect(idx.matchLength('a', chain('q', 8))).toBe(4);
    expect(idx.stats().evictions).toBe(8);
  });

  it('capacity changes shrink the entry', () => {
    const idx = new PrefixIndex(100);
    idx.insert('a', chain('x', 50));
    idx.setCapacity('a', 20);
    expect(idx.size('a')).toBe(20);
    expect(idx.matchLength('a', chain('x', 50))).toBe(20);
  });

  it('a hint (right, too short, too long, out of range) never changes the answer', () => {
    const idx = new PrefixIndex(1000);
    const full = chain('h', 40);
    for (let held = 0; held <= 40; held += 1) {
      idx.removeWorker('a');
      if (held > 0) idx.insert('a', full.slice(0, held));
      for (const hint of [0, 1, 2, held - 1, held, held + 1, 39, 40, 41, 1000, -3])
        expect(idx.matchLength('a', full, hint), `held ${held} hint ${hint}`).toBe(held);
    }
  });

  it('stays bounded under many inserts', () => {
    const idx = new PrefixIndex(100);
    for (let i = 0; i < 500; i++) idx.insert('a', chain(`s${i}-`, 30));
    expect(idx.size('a')).toBe(100);
    expect(idx.matchLength('a', chain('s499-', 30))).toBe(30);
  });
});

describe('hashBlock', () => {
  it('is the first 16 hex characters of sha256(parent, token ids as uint32 LE)', () => {
    const ids = [1, 2, 3, 70_000];
    const buf = Buffer.alloc(16);
    ids.forEach((x, i) => buf.writeUInt32LE(x, i * 4));
    const want = createHash('sha256').update('ctxgate').update(buf).digest('hex').slice(0, 16);
    expect(hashBlock('ctxgate', ids, 0, 4)).toBe(want);
  });
});

describe('PrefixIndex.matchAll', () => {
  const chain = (tag: string, n: number): string[] => Array.from({ length: n }, (_, i) => `${tag}${i}`);

  it('gives every worker the depth matchLength gives', () => {
    const idx = new PrefixIndex(10_000);
    const root = chain('r', 8);
    idx.insert('a', [...root, ...chain('a', 20)]);
    idx.insert('b', [...root, ...chain('b', 5)]);
    idx.insert('c', root.slice(0, 3));
    idx.insert('d', [...root, ...chain('a', 7)]);
    idx.insert('e', chain('zz', 4));
    const q = [...root, ...chain('a', 30)];
    const out = new Array<number>(idx.slotCount()).fill(-1);
    idx.matchAll(q, out);
    for (const w of ['a', 'b', 'c', 'd', 'e']) expect(out[idx.slotOf(w)]).toBe(idx.matchLength(w, q));
    expect(['a', 'b', 'c', 'd', 'e'].map((w) => out[idx.slotOf(w)])).toEqual([28, 8, 3, 15, 0]);
  });

  it('agrees with matchLength for 40 workers on random branching chains (the marks outgrow their first size)', () => {
    const idx = new PrefixIndex(100_000);
    let seed = 7;
    const rnd = (): number => (seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0) / 2 ** 32;
    const root = chain('r', 6);
    const convs = Array.from({ length: 12 }, (_, c) => [...root, ...chain(`c${c}-`, 30)]);
    for (let w = 0; w < 40; w++)
      for (let k = 0; k < 3; k++) {
        const c = convs[Math.floor(rnd() * convs.length)];
        idx.insert(`w${w}`, c.slice(0, 1 + Math.floor(rnd() * c.length)));
      }
    for (const q of convs) {
      const out = new Array<number>(idx.slotCount()).fill(-1);
      idx.matchAll(q, out);
      for (let w = 0; w < 40; w++) expect(out[idx.slotOf(`w${w}`)]).toBe(idx.matchLength(`w${w}`, q));
    }
  });

  it('forgets holders on eviction', () => {
    const idx = new PrefixIndex(10_000);
    idx.insert('a', chain('x', 10));
    idx.insert('b', chain('x', 10));
    idx.evict('a', chain('x', 10).slice(4));
    const out = new Array<number>(idx.slotCount()).fill(0);
    idx.matchAll(chain('x', 10), out);
    expect([out[idx.slotOf('a')], out[idx.slotOf('b')]]).toEqual([4, 10]);
    idx.removeWorker('b');
    idx.matchAll(chain('x', 10), out);
    expect(out[idx.slotOf('b')]).toBe(0);
  });
});

describe('PrefixIndex under churn', () => {
  it('feedback evictions and re-inserts keep the queue bounded and the LRU order', () => {
    const idx = new PrefixIndex(64);
    const chain = (tag: string, n: number): string[] => Array.from({ length: n }, (_, i) => `${tag}${i}`);
    for (let k = 0; k < 3000; k++) {
      const c = chain(`s${k % 5}-`, 12);
      idx.insert('a', c);
      idx.evict('a', c.slice(6));
    }
    expect(idx.size('a')).toBeLessThanOrEqual(64);
    // the five hot chains fit (5 × 12 = 60 ≤ 64) and are still held up to the evicted tail
    for (let s = 0; s < 5; s++) expect(idx.matchLength('a', chain(`s${s}-`, 12))).toBe(6);
    const q = (idx as unknown as { workers: Map<string, { queue: { size: number } }> }).workers.get('a')!;
    expect(q.queue.size).toBeLessThan(4 * 64 + 1024 + 12);
  });
});

describe('PrefixIndex recency of a growing chain', () => {
  it('a conversation that keeps growing keeps its early blocks while others churn the worker', () => {
    const idx = new PrefixIndex(100);
    const a = Array.from({ length: 60 }, (_, i) => `a${i}`);
    let lost = 0;
    for (let turn = 1; turn <= 60; turn++) {
      // what the conversation's next call finds: everything its previous call left
      if (idx.matchLength('w', a.slice(0, turn)) < turn - 1) lost++;
      idx.insert('w', a.slice(0, turn)); // the conversation: one more block per call
      idx.insert(
        'w',
        Array.from({ length: 5 }, (_, i) => `f${turn}-${i}`),
      ); // one-off traffic
    }
    expect(lost).toBe(0);
    expect(idx.size('w')).toBe(100);
  });
});
