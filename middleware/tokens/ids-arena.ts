// Prompt ids that grow in place across a session's calls. An agent resends its whole history each
// call, so call k+1's ids are call k's (up to the last cut the two texts share) plus a tail; copying
// the prefix into a fresh buffer every call is O(prompt) (~0.3 ms at 17k ids on the bench's growing
// sessions, most of it first touches of the fresh buffer's pages) where the new work is O(tail).
// Here the ids are a view at offset 0 of a buffer with room after them, and the buffer remembers how
// many of its ids are written (`written`). A call extends its predecessor's buffer in place when
// (1) the previous ids are that buffer's whole written part (no later call already extended it: a
// fork, a retry of the same call, re-sent after a failure) and (2) the tail begins with the previous
// ids' last ones again, which is the usual agent call: the previous prompt ended on the generation
// prompt, and this one's assistant turn opens with the same tokens. Only slots past the written part
// are written, so every view handed out before (the previous call's ids, still read by this call's
// diagnostics and by the router) keeps its values; otherwise the ids are copied into a new buffer.
// Complexity: O(tail) per call in place; a copy when the room runs out, one per ROOM_SHARE of growth
// (amortised O(tail)). Memory: at most ids × (1 + 1/ROOM_DIVISOR) + MIN_ROOM ids per kept call.
// Settings: ROOM_DIVISOR, MIN_ROOM. Not for a pool thread's result: it transfers its buffer whole.
import type { CachedIds } from './encode-cache.ts';

/** Room after a fresh buffer's ids: this fraction of them (1/4). */
const ROOM_DIVISOR = 4;
/** ...and at least this many ids (8 KB): a short session's first calls fit without a copy. */
const MIN_ROOM = 2048;

/** Ids written into each growable buffer (the end of the longest view handed out). */
const written = new WeakMap<ArrayBufferLike, number>();

/** A fresh growable buffer's first `count` ids as a view (left uninitialised: the caller writes them all). */
export function grownIds(count: number): Uint32Array {
  const room = Math.max(MIN_ROOM, Math.floor(count / ROOM_DIVISOR));
  const b = Buffer.allocUnsafeSlow((count + room) * 4);
  written.set(b.buffer, count);
  return new Uint32Array(b.buffer, b.byteOffset, count);
}

/**
 * prev[0, keep) followed by the runs' ids, `total` in all, written into prev's own buffer after its
 * last id; undefined (nothing written) when prev is not the written end of a growable buffer, the
 * runs do not begin with prev[keep, prev.length) or the room is too small.
 */
export function extendInPlace(
  prev: Uint32Array,
  keep: number,
  total: number,
  runs: readonly CachedIds[],
): Uint32Array | undefined {
  const buf = prev.buffer;
  const end = prev.length;
  if (prev.byteOffset !== 0 || written.get(buf) !== end || total < end || total * 4 > buf.byteLength) return undefined;
  const out = new Uint32Array(buf, 0, total);
  // One pass: slots before `end` are compared (the runs' ids there must be prev's), slots from `end`
  // on written; every compare comes before the first write, so a mismatch leaves the buffer as it was.
  let o = keep;
  for (const run of runs) {
    for (let i = 0; i < run.length; i++, o++) {
      if (o < end) {
        if (run[i] !== out[o]) return undefined;
      } else out[o] = run[i];
    }
  }
  written.set(buf, total);
  return out;
}

/** Ids a kept view pins: its whole buffer, room included (a short prompt's growable buffer holds
 *  MIN_ROOM ids more than it shows), so a cache that weighs kept calls by it bounds their memory. */
export function pinnedIds(ids: Uint32Array): number {
  return Math.max(ids.length, ids.buffer.byteLength >> 2);
}

/** Writes each run's ids in order from ids[at] (a packed run as one copy). */
export function writeRuns(ids: Uint32Array, at: number, runs: readonly CachedIds[]): void {
  let o = at;
  for (const run of runs) {
    if (run instanceof Uint32Array) ids.set(run, o);
    else for (let i = 0; i < run.length; i++) ids[o + i] = run[i];
    o += run.length;
  }
}
