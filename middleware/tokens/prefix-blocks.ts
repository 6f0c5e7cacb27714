// Block hashes of a prompt, reusing the previous call's chain for the blocks it shares: the chain
// is a pure function of the ids, so blocks inside the common token prefix hash identically and only
// the new tail costs SHA-256 work. Uses kvplanner/block-hash.ts (the routing side's definition).
// The chain's 64-bit keys (kvplanner/hash-keys.ts, what the routing index reads) likewise: the
// previous call's for the shared blocks, parsed for the new tail only. They grow in place like the
// prompt ids (ids-arena.ts): a view at offset 0 of a buffer with room after it; a call whose chain
// continues every block of the previous call's writes its new keys after them in that buffer (only
// slots past the written end, so every view handed out before keeps its values), else they are
// copied into a fresh buffer (one per KEY_ROOM_DIVISOR of growth: amortised O(new blocks), where a
// fresh array and a copy of every shared key was O(blocks) a call). Memory: at most
// keys × (1 + 1/KEY_ROOM_DIVISOR) + KEY_MIN_ROOM per kept call. Nobody transfers these buffers.
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

/** Room after a fresh keys buffer's keys: this fraction of them (1/4)... */
const KEY_ROOM_DIVISOR = 4;
/** ...and at least this many int32 slots (256 blocks, 2 KiB): a short session's first calls fit. */
const KEY_MIN_ROOM = 512;
/** Slots written into each growable keys buffer (the end of the longest view handed out). */
const keysWritten = new WeakMap<ArrayBufferLike, number>();

/** A fresh growable keys view of `slots` int32s, left uninitialised (the caller writes them all;
 *  a zeroed buffer would touch the room's pages too, each first touch a page fault). */
function grownKeys(slots: number): Int32Array {
  const room = Math.max(KEY_MIN_ROOM, Math.floor(slots / KEY_ROOM_DIVISOR));
  const b = Buffer.allocUnsafeSlow((slots + room) * 4);
  keysWritten.set(b.buffer, slots);
  return new Int32Array(b.buffer, b.byteOffset, slots);
}

/**
 * hashKeys(hashes), reusing the previous call's keys for the blocks inside the common token prefix
 * (the keys are a function of the hashes, and they of the ids: equal there, wherever the hashes
 * were made). O(new blocks) parsing; in place after the previous keys when they are their buffer's
 * written end and every one of their blocks is shared, else one copy of the shared ones.
 */
export function extendBlockKeys(
  hashes: readonly string[],
  blockSize: number,
  prev?: { hashes: readonly string[]; keys?: Int32Array; blockSize: number },
  commonTokens = 0,
): Int32Array {
  const n = hashes.length;
  let reuse = 0;
  const pk = prev?.keys;
  if (pk !== undefined && prev!.blockSize === blockSize) {
    reuse = Math.min(n, pk.length >> 1, prev!.hashes.length, Math.floor(commonTokens / blockSize));
    // the keys are the hashes' only while the last shared hash is equal (a chain hash covers every
    // block before it): hashes made on the pool under another seed (a rotated cache salt) are not
    if (reuse > 0 && hashes[reuse - 1] !== prev!.hashes[reuse - 1]) reuse = 0;
    // Every previous key shared and the view its buffer's written end: the new keys go after it.
    const buf = pk.buffer;
    if (reuse > 0 && 2 * reuse === pk.length && pk.byteOffset === 0 && keysWritten.get(buf) === pk.length) {
      if (2 * n * 4 <= buf.byteLength) {
        const keys = new Int32Array(buf, 0, 2 * n);
        writeHashKeys(hashes, keys, reuse, n);
        keysWritten.set(buf, 2 * n);
        return keys;
      }
    }
  }
  const keys = grownKeys(2 * n);
  if (reuse > 0) keys.set(pk!.subarray(0, 2 * reuse));
  writeHashKeys(hashes, keys, reuse, n);
  return keys;
}
