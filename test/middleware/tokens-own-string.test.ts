// The id cache (encode-cache.ts) keeps no prompt alive through its keys: a piece is a slice of a
// rendered prompt, and a key built from it (or the slice itself) would be a view into the whole
// prompt. 200 keys sliced from 200k-character texts, through both ways into the cache, must retain
// far less than the 40 MB those texts hold.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { lookupEncoded, peekEncoded, storeEncoded } from '../../middleware/tokens/encode-cache.ts';
import { ownString } from '../../middleware/tokens/own-string.ts';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** Heap (MB) still held after `fill` and two collections. */
function retainedBy(fill: () => void): number {
  gc();
  const before = process.memoryUsage().heapUsed;
  fill();
  gc();
  gc();
  return (process.memoryUsage().heapUsed - before) / 1e6;
}

const text = (tag: string, i: number): string => `${tag} piece number ${i} of many ${'y'.repeat(200_000)}`;

describe('own strings in the id cache', () => {
  it('ownString is equal and short strings are returned as they are', () => {
    const s = text('a', 1).slice(2, 40);
    expect(ownString(s)).toBe(s);
    expect(ownString('short')).toBe('short');
  });

  it('lookupEncoded and storeEncoded keep no text their pieces were sliced from alive', () => {
    const looked = retainedBy(() => {
      for (let i = 0; i < 200; i++) lookupEncoded('own-test', (t) => [t.length], text('look', i).slice(0, 30));
    });
    const stored = retainedBy(() => {
      for (let i = 0; i < 200; i++) storeEncoded('own-test', text('store', i).slice(0, 30), Object.freeze([i]));
    });
    expect(Array.from(peekEncoded('own-test', text('store', 7).slice(0, 30)) ?? [])).toEqual([7]);
    expect(looked).toBeLessThan(8);
    expect(stored).toBeLessThan(8);
  });
});
