// The JavaScript SHA-256 of the block-hash chain gives node:crypto's digest head for every message
// it takes (parents of every word length, ids of every uint32 value, message lengths around the
// 55/56/64-byte padding boundaries and over many chunks), and declines (undefined) the parents it
// cannot take, which hashBlock then hashes natively: its answers equal the native ones either way.
// Seeded: the same cases every run.
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { blockHashes, hashBlock } from '../../kvplanner/block-hash.ts';
import { sha256Head } from '../../kvplanner/sha256-head.ts';

const native = (parent: string, ids: ArrayLike<number>, start: number, end: number): string => {
  const buf = Buffer.alloc((end - start) * 4);
  for (let i = start; i < end; i++) buf.writeUInt32LE(ids[i] >>> 0, (i - start) * 4);
  return createHash('sha256').update(parent, 'utf8').update(buf).digest('hex').slice(0, 16);
};

const uint32 = fc.oneof(
  fc.integer({ min: 0, max: 0xffffffff }),
  fc.constantFrom(0, 1, 0x7f, 0x80, 0xff, 0x100, 0x7fffffff, 0x80000000, 0xffffffff, 151_643),
);
const asciiParent = fc
  .array(fc.integer({ min: 0, max: 0x7f }), { maxLength: 40 })
  .map((cs) => String.fromCharCode(...cs.slice(0, cs.length & ~3)));

describe('sha256Head', () => {
  it("equals node:crypto's digest head for ASCII parents of whole words and any ids", () => {
    fc.assert(
      fc.property(asciiParent, fc.array(uint32, { maxLength: 70 }), fc.nat(3), (parent, ids, pad) => {
        const wide = [...Array(pad).fill(5), ...ids, 9];
        expect(sha256Head(parent, wide, pad, pad + ids.length)).toBe(native(parent, ids, 0, ids.length));
      }),
      { seed: 20261201, numRuns: 2000 },
    );
  });

  it('covers every padding case: message lengths 0 to 200 bytes in words', () => {
    const ids = Uint32Array.from({ length: 50 }, (_, i) => (i * 2654435761) >>> 0);
    for (const parent of ['', '0123', '0123456789abcdef', 'x'.repeat(60)])
      for (let n = 0; n <= 50; n++)
        expect(sha256Head(parent, ids, 0, n), `${parent.length} ${n}`).toBe(native(parent, ids, 0, n));
  });

  it('declines parents it cannot take; hashBlock hashes those natively, to the same answers', () => {
    const ids = [1, 2, 3, 4];
    for (const parent of [
      'ctxgate',
      'ctxgate\u0000salt',
      'é123',
      '🙂🙂',
      '0123456789abcde\u0080',
      '\u007f\u007f\u007f\u007f',
    ]) {
      const takes = parent.length % 4 === 0 && [...parent].every((c) => c.charCodeAt(0) <= 0x7f);
      expect(sha256Head(parent, ids, 0, 4), parent).toBe(takes ? native(parent, ids, 0, 4) : undefined);
      expect(hashBlock(parent, ids, 0, 4)).toBe(native(parent, ids, 0, 4));
    }
    expect(['ctxgate', 'é123', '🙂🙂'].map((p) => sha256Head(p, ids, 0, 4))).toEqual([undefined, undefined, undefined]);
  });

  it('a chain from the default and a salted seed equals the chain hashed natively', () => {
    const ids = Uint32Array.from({ length: 16 * 40 + 7 }, (_, i) => (i * 7919 + 13) % 151_643);
    for (const seed of ['ctxgate', 'ctxgate\u0000tenant-salt é', 'abcd']) {
      let parent = seed;
      const want: string[] = [];
      for (let b = 0; b < 40; b++) want.push((parent = native(parent, ids, b * 16, (b + 1) * 16)));
      expect(blockHashes(ids, 16, seed)).toEqual(want);
    }
  });
});
