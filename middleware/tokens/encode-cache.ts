// Segment id cache: token ids of a text, keyed by (tokenizer name, text). Agents resend the same
// system prompt, tool schemas and history every call, so nearly every segment is a hit. The text
// itself is the key (V8 hashes a string once, natively, faster than a sha1 and without collisions);
// the size bound counts the ids plus the key's characters / 4. `textHash` is the short content hash
// used where a key must not hold the text (session state).
import { createHash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import { ownString } from './own-string.ts';

/** Total token ids kept across all tokenizers (4 bytes-ish each in a packed array, more in JS). */
export const DEFAULT_ENCODE_CACHE_TOKENS = 4_000_000;

const cache = new LRUCache<string, readonly number[]>({
  maxSize: DEFAULT_ENCODE_CACHE_TOKENS,
  sizeCalculation: (v, k) => Math.max(1, v.length + (k.length >> 2)),
});

export function textHash(text: string): string {
  return createHash('sha1').update(text).digest('base64');
}

export function encodeCachedWith(name: string, encode: (t: string) => number[], text: string): readonly number[] {
  return lookupEncoded(name, encode, text).ids;
}

/** Like encodeCachedWith, also saying whether the ids came from the cache. */
export function lookupEncoded(
  name: string,
  encode: (t: string) => number[],
  text: string,
): { ids: readonly number[]; hit: boolean } {
  // Short pieces ("\n", "assistant\n") are cached too: a BPE call costs ~10 µs whatever the length.
  if (text.length === 0) return { ids: [], hit: true };
  const key = name + '\u0000' + text;
  const hit = cache.get(key);
  if (hit) return { ids: hit, hit: true };
  const ids = Object.freeze(encode(text));
  // The text is usually a slice of a rendered prompt: a key of its own keeps only its characters.
  cache.set(ownString(key), ids);
  return { ids, hit: false };
}

/** Cached ids of `text`, without encoding on a miss. */
export function peekEncoded(name: string, text: string): readonly number[] | undefined {
  return text.length === 0 ? [] : cache.get(name + '\u0000' + text);
}

/** Caches ids computed elsewhere (from verified parts). */
export function storeEncoded(name: string, text: string, ids: readonly number[]): void {
  if (text.length > 0)
    cache.set(ownString(name + '\u0000' + text), Object.isFrozen(ids) ? ids : Object.freeze(ids.slice()));
}

export function encodeCacheStats(): { entries: number; tokens: number } {
  return { entries: cache.size, tokens: cache.calculatedSize };
}
