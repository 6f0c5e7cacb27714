// vLLM-style prefix block hashes: block i's hash = H(hash(i-1) ‖ token ids of block i), full blocks
// only, so equal hashes at position i imply equal prompts up to the end of block i (the same
// chain vLLM's automatic prefix caching keys its KV blocks on; SGLang keys a radix tree on ids).
// H = SHA-256 truncated to 64 bits (16 hex chars): vLLM itself defaults to sha256 since v0.10;
// 64 bits keep the collision odds negligible (~n²/2^65) for any realistic index while keeping the
// keys short for Map lookups and Redis. Not byte-identical to vLLM (which hashes a pickled tuple and
// a random per-process seed) — only the structure is compatible, which is what routing needs.
// Cost: O(tokens), one SHA-256 per block: in JavaScript (sha256-head.ts, ~2x cheaper than a call
// into node:crypto for an 80-byte message) when the parent is ASCII of a length in whole words, as
// every parent but a chain's seed is; else one native one-shot hash over a reused buffer (parent
// then ids). The same bytes either way, so the same hashes.
import * as crypto from 'node:crypto';
import { sha256Head } from './sha256-head.ts';

const { createHash } = crypto;
/** One-shot hashing (Node >= 20.12); a streaming Hash where it is missing. */
const oneShot = (crypto as { hash?: (alg: string, data: Buffer, enc: 'buffer') => Buffer }).hash;

/** vLLM's default block size (tokens per KV block). */
export const DEFAULT_BLOCK_SIZE = 16;
/** Root "parent hash" when no seed is given (vLLM: NONE_HASH). */
export const DEFAULT_HASH_SEED = 'ctxgate';
/** Characters per pseudo-block when only text is known (≈16 tokens at ≈4 chars/token). */
export const TEXT_BLOCK_CHARS = 64;

const HEX_CHARS = 16;

/** Root seed of a salted chain (a tenant's cache_salt): like vLLM, the salt only enters the first
 *  block's hash, and through the chain every later one. */
export function hashSeed(cacheSalt?: string): string {
  return cacheSalt ? `${DEFAULT_HASH_SEED}\u0000${cacheSalt}` : DEFAULT_HASH_SEED;
}

/** Hash of one block given its parent's hash (hex) and its token ids. */
export function hashBlock(parent: string, tokenIds: ArrayLike<number>, start: number, end: number): string {
  const js = sha256Head(parent, tokenIds, start, end);
  if (js !== undefined) return js;
  // H(utf8(parent) ‖ ids as uint32 LE), in one reused buffer (hashBlock never re-enters)
  const need = parent.length * 3 + (end - start) * 4;
  if (scratch.length < need) scratch = Buffer.allocUnsafe(Math.max(need, 2 * scratch.length));
  let o = scratch.write(parent, 0, 'utf8');
  for (let i = start; i < end; i++, o += 4) scratch.writeUInt32LE(tokenIds[i] >>> 0, o);
  const data = scratch.subarray(0, o);
  const digest = oneShot ? oneShot('sha256', data, 'buffer') : createHash('sha256').update(data).digest();
  // toString over the first bytes gives a flat 16-character string; digest('hex').slice(0, 16)
  // is a sliced view that keeps the 64-character digest alive and costs an extra memory hop on
  // every Map lookup in the routing indexes (same characters either way)
  return digest.toString('hex', 0, HEX_CHARS / 2);
}
let scratch = Buffer.allocUnsafe(4096);

/**
 * Hash chain of the full blocks of `tokenIds` (a trailing partial block is not hashed, as in vLLM).
 * `seed` plays the role of vLLM's root hash / extra keys (e.g. a model or LoRA name).
 */
export function blockHashes(
  tokenIds: ArrayLike<number>,
  blockSize: number = DEFAULT_BLOCK_SIZE,
  seed: string = DEFAULT_HASH_SEED,
): string[] {
  if (!Number.isInteger(blockSize) || blockSize <= 0)
    throw new Error(`blockSize must be a positive integer, got ${blockSize}`);
  const n = Math.floor(tokenIds.length / blockSize);
  const out = new Array<string>(n);
  let parent = seed;
  for (let b = 0; b < n; b++) {
    parent = hashBlock(parent, tokenIds, b * blockSize, (b + 1) * blockSize);
    out[b] = parent;
  }
  return out;
}

/**
 * Fallback chain over raw text when no token ids exist: fixed-size character chunks hashed the
 * same way. Only comparable with other text chains, never with token chains.
 */
export function textBlockHashes(
  text: string,
  chunkChars: number = TEXT_BLOCK_CHARS,
  seed: string = DEFAULT_HASH_SEED,
): string[] {
  const n = Math.floor(text.length / chunkChars);
  const out = new Array<string>(n);
  let parent = 'text:' + seed;
  for (let b = 0; b < n; b++) {
    parent = createHash('sha256')
      .update(parent)
      .update(text.slice(b * chunkChars, (b + 1) * chunkChars))
      .digest('hex')
      .slice(0, HEX_CHARS);
    out[b] = parent;
  }
  return out;
}
