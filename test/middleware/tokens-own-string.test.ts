// The id cache (encode-cache.ts) keeps no prompt alive through its keys: a piece is a slice of a
// rendered prompt, and a key built from it (or the slice itself) would be a view into the whole
// prompt. 200 keys sliced from 200k-character texts, through both ways into the cache, must retain
// under a fifth of what the same texts held through views retain in this process (~40 MB).
import { describe, expect, it } from 'vitest';
import { lookupEncoded, peekEncoded, storeEncoded } from '../../middleware/tokens/encode-cache.ts';
import { ownString } from '../../middleware/tokens/own-string.ts';
import { retainedMb, viewsHeldMb } from '../helpers/retained.ts';

const text = (tag: string, i: number): string => `${tag} piece number ${i} of many ${'y'.repeat(200_000)}`;

describe('own strings in the id cache', () => {
  it('ownString is equal and short strings are returned as they are', () => {
    const s = text('a', 1).slice(2, 40);
    expect(ownString(s)).toBe(s);
    expect(ownString('short')).toBe('short');
  });

  it('lookupEncoded and storeEncoded keep no text their pieces were sliced from alive', () => {
    const looked = retainedMb(() => {
      for (let i = 0; i < 200; i++) lookupEncoded('own-test', (t) => [t.length], text('look', i).slice(0, 30));
    });
    const stored = retainedMb(() => {
      for (let i = 0; i < 200; i++) storeEncoded('own-test', text('store', i).slice(0, 30), Object.freeze([i]));
    });
    expect(Array.from(peekEncoded('own-test', text('store', 7).slice(0, 30)) ?? [])).toEqual([7]);
    // the yardstick, in this process: the same texts held through views (~40 MB)
    const views = viewsHeldMb(200, (i) => text('view', i));
    expect(views).toBeGreaterThan(20);
    expect(looked).toBeLessThan(views / 5);
    expect(stored).toBeLessThan(views / 5);
  });
});
