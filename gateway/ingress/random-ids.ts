// Random ids of answers (`msg_…`, `resp_…`, item ids): hex of CSPRNG bytes drawn from a pool,
// as node's randomUUID does. A synchronous randomBytes call cost 10-20 µs per id on the gateway's
// hot path (several ids per Responses answer); one call now fills ID_POOL_BYTES, so ids cost a
// slice and a hex encode. Each id's bytes are used once; O(bytes) per id.
import { randomFillSync } from 'node:crypto';

/** Bytes drawn per CSPRNG call (128 ids of 12 bytes). */
export const ID_POOL_BYTES = 1536;

const pool = Buffer.alloc(ID_POOL_BYTES);
let at = ID_POOL_BYTES;

/** `bytes` fresh random bytes as lowercase hex (what randomBytes(bytes).toString('hex') gives). */
export function randomHex(bytes: number): string {
  if (bytes > ID_POOL_BYTES) throw new RangeError(`randomHex: at most ${ID_POOL_BYTES} bytes`);
  if (at + bytes > ID_POOL_BYTES) {
    randomFillSync(pool);
    at = 0;
  }
  const s = pool.toString('hex', at, at + bytes);
  at += bytes;
  return s;
}
