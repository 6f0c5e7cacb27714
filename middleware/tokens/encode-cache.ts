// Segment id cache: token ids of a text, keyed by (tokenizer name, sha1 of text). Agents resend the
// same system prompt, tool schemas and history every call, so nearly every segment is a hit.
// Cost: sha1 over the text (~0.5 µs/KB) per lookup; memory bounded by total cached ids.
import { createHash } from 'node:crypto';
import { LRUCache } from 'lru-cache';

/** Total token ids kept across all tokenizers (4 bytes-ish each in a packed array, more in JS). */
export const DEFAULT_ENCODE_CACHE_TOKENS = 4_000_000;
/** Texts shorter than this are encoded directly: hashing would cost about as much. */
const MIN_CACHED_CHARS = 16;

const cache = new LRUCache<string, readonly number[]>({
  maxSize: DEFAULT_ENCODE_CACHE_TOKENS,
  sizeCalculation: (v) => Math.max(1, v.length),
});

export function textHash(text: string): string {
  return createHash('sha1').update(text).digest('base64');
}

export function encodeCachedWith(name: string, encode: (t: string) => number[], text: string): readonly number[] {
  if (text.length < MIN_CACHED_CHARS) return encode(text);
  const key = name + '\u0000' + textHash(text);
  const hit = cache.get(key);
  if (hit) return hit;
  const ids = Object.freeze(encode(text));
  cache.set(key, ids);
  return ids;
}

export function encodeCacheStats(): { entries: number; tokens: number } {
  return { entries: cache.size, tokens: cache.calculatedSize };
}
