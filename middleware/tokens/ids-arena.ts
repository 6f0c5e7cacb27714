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
// Complexity: O(tail) per call in place; a copy when the room runs out, one per 1/ROOM_DIVISOR of
// growth (amortised O(tail)). Each copy writes the prefix into pages never touched before, and on
// a VM that returns freed pages to its host a first touch costs ~25 µs a 4 KiB page (measured on
// the bench host: a 32 KiB copy ~144 µs, ~40 µs per call at a quarter's room): half of the ids as
// room halves the ids copied over a 1k → 17k-token session (3.9M → 2.2M ids per 2,040 bench calls).
// Memory: at most ids × (1 + 1/ROOM_DIVISOR) + MIN_ROOM ids per kept call (the local cache weighs
// the room too: pinnedIds). Settings: ROOM_DIVISOR, MIN_ROOM. Not for a pool thread's result: it
// transfers its buffer whole.
import type { CachedIds } from './encode-cache.ts';

/** Room after a fresh buffer's ids: this fraction of them (1/2). */
const ROOM_DIVISOR = 2;
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
  // Slots before `end` are compared first (the runs' ids there must be prev's), then the slots from
  // `end` on written, a packed run's part there as one native copy: a mismatch leaves the buffer as
  // it was.
  let o = keep;
  let r = 0;
  let i = 0;
  for (; r < runs.length && o < end; r++) {
    const run = runs[r];
    for (i = 0; i < run.length && o < end; i++, o++) if (run[i] !== out[o]) return undefined;
    if (i < run.length) break;
    i = 0;
  }
  for (; r < runs.length; r++, i = 0) {
    const run = runs[r];
    if (i === 0 && run instanceof Uint32Array) out.set(run, o);
    else if (run instanceof Uint32Array) out.set(run.subarray(i), o);
    else for (let j = i; j < run.length; j++) out[o + j - i] = run[j];
    o += run.length - i;
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
