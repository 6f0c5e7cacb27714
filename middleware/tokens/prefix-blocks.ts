// Block hashes of a prompt, reusing the previous call's chain for the blocks it shares: the chain
// is a pure function of the ids, so blocks inside the common token prefix hash identically and only
// the new tail costs SHA-256 work. Uses kvplanner/block-hash.ts (the routing side's definition).
// The chain's 64-bit keys (kvplanner/hash-keys.ts, what the routing index reads) likewise: the
// previous call's for the shared blocks (one copy), parsed for the new tail only.
import { DEFAULT_HASH_SEED, hashBlock } from '../../kvplanner/block-hash.ts';
import { writeHashKeys } from '../../kvplanner/hash-keys.ts';
// `seed` is hashSeed(cache salt): the previous call reused must be of the same tenant (it is: the
// pipeline keeps previous calls per tenant and session).

export function extendBlockHashes(
  ids: ArrayLike<number>,
  blockSize: number,
  prev?: { hashes: readonly string[]; blockSize: number },
  commonTokens = 0,
  seed: string = DEFAULT_HASH_SEED,
): string[] {
  const n = Math.floor(ids.length / blockSize);
  const out = new Array<string>(n);
  let b = 0;
  let parent = seed;
  if (prev && prev.blockSize === blockSize) {
    const reuse = Math.min(n, prev.hashes.length, Math.floor(commonTokens / blockSize));
    for (; b < reuse; b++) out[b] = prev.hashes[b];
    if (b > 0) parent = out[b - 1];
  }
  for (; b < n; b++) {
    parent = hashBlock(parent, ids, b * blockSize, (b + 1) * blockSize);
    out[b] = parent;
  }
  return out;
}

/**
 * hashKeys(hashes), reusing the previous call's keys for the blocks inside the common token prefix
 * (the keys are a function of the hashes, and they of the ids: equal there, wherever the hashes
 * were made). O(new blocks) parsing plus one copy.
 */
export function extendBlockKeys(
  hashes: readonly string[],
  blockSize: number,
  prev?: { hashes: readonly string[]; keys?: Int32Array; blockSize: number },
  commonTokens = 0,
): Int32Array {
  const n = hashes.length;
  const keys = new Int32Array(2 * n);
  let reuse = 0;
  if (prev?.keys && prev.blockSize === blockSize) {
    reuse = Math.min(n, prev.keys.length >> 1, prev.hashes.length, Math.floor(commonTokens / blockSize));
    // the keys are the hashes' only while the last shared hash is equal (a chain hash covers every
    // block before it): hashes made on the pool under another seed (a rotated cache salt) are not
    if (reuse > 0 && hashes[reuse - 1] !== prev.hashes[reuse - 1]) reuse = 0;
    keys.set(prev.keys.subarray(0, 2 * reuse));
  }
  writeHashKeys(hashes, keys, reuse, n);
  return keys;
}
