// Block hashes of a prompt, reusing the previous call's chain for the blocks it shares: the chain
// is a pure function of the ids, so blocks inside the common token prefix hash identically and only
// the new tail costs SHA-256 work. Uses kvplanner/block-hash.ts (the routing side's definition).
import { DEFAULT_HASH_SEED, hashBlock } from '../../kvplanner/block-hash.ts';
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
