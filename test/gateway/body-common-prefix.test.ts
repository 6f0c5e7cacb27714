// commonPrefix (gateway/body/incremental-parse.ts) is the exact longest common prefix of two
// buffers, given a length known equal (`from`) and a likely one (`guess`), wherever the first
// difference falls (inside or at the edge of a 4 KiB chunk, in the halving window, at the end, none);
// and the body memo's search finds the neighbours with the longest common prefix among many
// kept bodies (tested through keep/parse in body-incremental-parse.test.ts and here by outcome).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BodyMemo } from '../../gateway/body/body-memo.ts';
import { commonPrefix } from '../../gateway/body/incremental-parse.ts';

function naive(a: Buffer, b: Buffer): number {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  return i;
}

describe('commonPrefix', () => {
  it('equals a byte-by-byte scan for any difference position, from and guess', () => {
    const edges = [0, 1, 15, 16, 17, 127, 128, 4095, 4096, 4097, 8191, 8192, 12_000];
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 13_000 }),
        fc.oneof(fc.constantFrom(...edges), fc.integer({ min: 0, max: 13_000 })),
        fc.integer({ min: 0, max: 300 }),
        fc.nat(),
        fc.nat(),
        (len, diffAt, extra, fromSeed, guessSeed) => {
          const a = Buffer.alloc(len, 0x61);
          for (let i = 0; i < len; i++) a[i] = 0x61 + (i % 7);
          const b = Buffer.concat([a, Buffer.alloc(extra, 0x7a)]);
          if (diffAt < len) b[diffAt] ^= 0x01;
          const lcp = naive(a, b);
          const from = fromSeed % (lcp + 1);
          const guess = guessSeed % (b.length + 2);
          expect(commonPrefix(a, b, from, guess)).toBe(lcp);
          expect(commonPrefix(b, a, from, guess)).toBe(lcp);
        },
      ),
      { numRuns: 3000, seed: 17 },
    );
  });
});

describe('body memo search', () => {
  it('parses each body against the kept body sharing its longest prefix, among 300 others', () => {
    const memo = new BodyMemo();
    const body = (s: number, n: number): Buffer =>
      Buffer.from(
        JSON.stringify({
          model: 'm',
          messages: [
            { role: 'system', content: 'x'.repeat(3000) },
            { role: 'user', content: `task ${s}` },
            ...Array.from({ length: n }, (_, i) => ({ role: 'tool', content: `${s}:${i}:${'y'.repeat(900)}` })),
          ],
        }),
      );
    for (let n = 0; n < 4; n++)
      for (let s = 0; s < 100; s++) {
        const out = memo.parse('t', body(s, n), 32);
        if (n > 0) {
          // Everything up to the previous call's last element is reused: the search found that body.
          const prev = body(s, n - 1);
          expect(out.reused).toBeGreaterThan(prev.length - 1000);
          expect(out.extended).toBe(true);
        }
        memo.keep(out.pending);
      }
    // The last output edited to sort after the kept body (its neighbour before, not after it).
    for (let s = 0; s < 100; s++) {
      const prev = body(s, 3);
      const edited = Buffer.from(prev.toString().replace(/"}]}$/, 'z"}]}'));
      expect(edited.compare(prev)).toBeGreaterThan(0);
      const out = memo.parse('t', edited, 32);
      expect(out.reused).toBeGreaterThan(prev.length - 2000);
    }
  });
});
