// Segment id cache: token ids of a text, keyed by (tokenizer name, text). Agents resend the same
// system prompt, tool schemas and history every call, so nearly every segment is a hit. The text
// itself is the key (V8 hashes a string once, natively, faster than a sha1 and without collisions);
// the size bound counts the ids plus the key's characters / 4. `textHash` is the short content hash
// used where a key must not hold the text (session state). The tokens stage's own entries
// (segment-tokens.ts: `pack`) hold their ids in a Uint32Array: 4 bytes an id outside the JS heap,
// which neither a mark-compact walks slot by slot nor the scavenger copies (a full cache as
// number[] arrays: ~40 MB of heap and ~10 ms more per full GC, measured); entries made through a
// handle's encodeCached stay the frozen number[] that API returns.
import { createHash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import { ownString } from './own-string.ts';

/** Total token ids kept across all tokenizers (4 bytes-ish each in a packed array, more in JS). */
export const DEFAULT_ENCODE_CACHE_TOKENS = 4_000_000;

/** A cached entry's ids; never mutated (a Uint32Array cannot be frozen: callers only read). */
export type CachedIds = readonly number[] | Uint32Array;

const cache = new LRUCache<string, CachedIds>({
  maxSize: DEFAULT_ENCODE_CACHE_TOKENS,
  sizeCalculation: (v, k) => Math.max(1, v.length + (k.length >> 2)),
});

/** `ids` in a Uint32Array where each is a uint32 (every tokenizer's are), else frozen as they are. */
function packed(ids: readonly number[]): CachedIds {
  const out = new Uint32Array(ids.length);
  for (let i = 0; i < ids.length; i++) {
    const v = ids[i];
    // (an id that is no uint32, as a missing unknown-token id is, keeps the array: same values)
    if (v !== v >>> 0) return Object.isFrozen(ids) ? ids : Object.freeze(ids.slice());
    out[i] = v;
  }
  return out;
}

export function textHash(text: string): string {
  return createHash('sha1').update(text).digest('base64');
}

export function encodeCachedWith(name: string, encode: (t: string) => number[], text: string): readonly number[] {
  const ids = lookupEncoded(name, encode, text).ids;
  // A packed entry (the tokens stage's) read through the handle's API: an array of its own.
  return ids instanceof Uint32Array ? Object.freeze(Array.from(ids)) : ids;
}

/**
 * How many ids `text` has, from the cache (either kind of entry, no copy) or encoded and cached
 * packed: a count reads only the length, and the tokens stage, which later frames these ids
 * (segment-tokens.ts), copies a packed entry in one block instead of id by id.
 */
export function countCachedWith(name: string, encode: (t: string) => number[], text: string): number {
  return lookupEncoded(name, encode, text, true).ids.length;
}

/** Like encodeCachedWith, also saying whether the ids came from the cache; `pack` stores a miss packed. */
export function lookupEncoded(
  name: string,
  encode: (t: string) => number[],
  text: string,
  pack = false,
): { ids: CachedIds; hit: boolean } {
  // Short pieces ("\n", "assistant\n") are cached too: a BPE call costs ~10 µs whatever the length.
  if (text.length === 0) return { ids: [], hit: true };
  const key = name + '\u0000' + text;
  const hit = cache.get(key);
  if (hit) return { ids: hit, hit: true };
  const fresh = encode(text);
  const ids = pack ? packed(fresh) : Object.freeze(fresh);
  // The text is usually a slice of a rendered prompt: a key of its own keeps only its characters.
  cache.set(ownString(key), ids);
  return { ids, hit: false };
}

/** Cached ids of `text`, without encoding on a miss. */
export function peekEncoded(name: string, text: string): CachedIds | undefined {
  return text.length === 0 ? [] : cache.get(name + '\u0000' + text);
}

/** Caches ids computed elsewhere (from verified parts), packed; a Uint32Array is kept as it is
 *  (the caller hands it over and never writes it again). */
export function storeEncoded(name: string, text: string, ids: readonly number[] | Uint32Array): void {
  if (text.length > 0) cache.set(ownString(name + '\u0000' + text), ids instanceof Uint32Array ? ids : packed(ids));
}

export function encodeCacheStats(): { entries: number; tokens: number } {
  return { entries: cache.size, tokens: cache.calculatedSize };
}
