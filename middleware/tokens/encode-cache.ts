// Segment id cache: token ids of a text, keyed by (tokenizer name, text). Agents resend the same
// system prompt, tool schemas and history every call, so nearly every segment is a hit. The text
// itself is the key (V8 hashes a string once, natively, faster than a sha1 and without collisions),
// and its entry holds one slot per tokenizer that encoded it (nearly always one): a key built as
// name + text was a concatenation that V8 flattens to hash, a copy of the whole text per lookup
// (~1.8 kB for a 1.7k-character tool output, measured), where a slice of the prompt is hashed in
// place. The size bound counts every slot's ids plus the key's characters / 4. `textHash` is the short content hash
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

/** One tokenizer's ids of an entry's text; `next` another tokenizer's, if any. */
interface Slot {
  readonly name: string;
  readonly ids: CachedIds;
  readonly next: Slot | undefined;
}

function slotSize(v: Slot, k: string): number {
  let n = k.length >> 2;
  for (let s: Slot | undefined = v; s !== undefined; s = s.next) n += s.ids.length;
  return Math.max(1, n);
}

const cache = new LRUCache<string, Slot>({ maxSize: DEFAULT_ENCODE_CACHE_TOKENS, sizeCalculation: slotSize });

/** `name`'s ids of `text`, from the cache (counts as a use of the entry). */
function cached(name: string, text: string): CachedIds | undefined {
  for (let s = cache.get(text); s !== undefined; s = s.next) if (s.name === name) return s.ids;
  return undefined;
}

/** Caches `name`'s ids of `text`, keeping the other tokenizers' slots of that text. */
function remember(name: string, text: string, ids: CachedIds): void {
  let others: Slot | undefined;
  for (let s = cache.peek(text); s !== undefined; s = s.next)
    if (s.name !== name) others = { name: s.name, ids: s.ids, next: others };
  // The text is usually a slice of a rendered prompt: a key of its own keeps only its characters.
  cache.set(ownString(text), { name, ids, next: others });
}

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
  const hit = cached(name, text);
  if (hit) return { ids: hit, hit: true };
  const fresh = encode(text);
  const ids = pack ? packed(fresh) : Object.freeze(fresh);
  remember(name, text, ids);
  return { ids, hit: false };
}

/** Cached ids of `text`, without encoding on a miss. */
export function peekEncoded(name: string, text: string): CachedIds | undefined {
  return text.length === 0 ? [] : cached(name, text);
}

/** Caches ids computed elsewhere (from verified parts), packed; a Uint32Array is kept as it is
 *  (the caller hands it over and never writes it again). */
export function storeEncoded(name: string, text: string, ids: readonly number[] | Uint32Array): void {
  if (text.length > 0) remember(name, text, ids instanceof Uint32Array ? ids : packed(ids));
}

/** Entries are texts (each with one slot per tokenizer that encoded it); tokens the size bound's count. */
export function encodeCacheStats(): { entries: number; tokens: number } {
  return { entries: cache.size, tokens: cache.calculatedSize };
}
