// The ledger's per-call audit records (LedgerState.calls, LEDGER_SLOT v2): one record per tool
// call, [id, action number, exit code, output hash], in the order the calls were first seen, kept
// as chunks of at most CALL_CHUNK records. The state a store holds is frozen and shared with the
// next call, so adding a record copies the list of chunks and the last chunk (O(calls / CALL_CHUNK
// + CALL_CHUNK), ~64 + 64 pointers at the 4,096-record bound) where a JSON record keyed by id
// had to be copied whole (O(calls)). A record whose id is already there is replaced in place (its
// chunk copied), as the key of a record would keep its place. Dropping the oldest records (the
// bound) copies the first chunk. Finding an id: one Set per full frozen chunk, built once in this
// process (O(CALL_CHUNK)), and a scan of the last chunk: O(chunks + CALL_CHUNK) per lookup.
// v1 kept the records as `Record<id, [call, exit, hash]>`; fromV1Calls turns one into chunks in
// its key order (the order v1 trimmed by).
import type { CallRecord } from './types.ts';

/** Records per chunk: √ of the record bound, so a call's copies are balanced at the bound. */
export const CALL_CHUNK = 64;

const idSets = new WeakMap<readonly CallRecord[], Set<string>>();

/** Index in `chunk` of the record of `id`, or -1. A full frozen chunk (it never changes again but
 * when the bound drops it) is looked up in a Set built once; the last chunk, the one that grows,
 * is scanned (≤ CALL_CHUNK string compares: cheaper than a Set rebuilt each call). */
function indexIn(chunk: readonly CallRecord[], id: string): number {
  if (chunk.length === CALL_CHUNK && Object.isFrozen(chunk)) {
    let s = idSets.get(chunk);
    if (!s) {
      s = new Set();
      for (const r of chunk) s.add(r[0]);
      idSets.set(chunk, s);
    }
    if (!s.has(id)) return -1;
  }
  for (let j = 0; j < chunk.length; j++) if (chunk[j][0] === id) return j;
  return -1;
}

/** Number of records (O(chunks)). */
export function callCount(calls: readonly (readonly CallRecord[])[]): number {
  let n = 0;
  for (const c of calls) n += c.length;
  return n;
}

/** The record of call `id`, if kept. */
export function findCall(calls: readonly (readonly CallRecord[])[], id: string): CallRecord | undefined {
  for (let i = calls.length - 1; i >= 0; i--) {
    const j = indexIn(calls[i], id);
    if (j >= 0) return calls[i][j];
  }
  return undefined;
}

/** The records as a v1-style record keyed by id (for readers that look ids up many times). With
 * no prototype: an id is the agent's text, and `__proto__`, `constructor` or `toString` must be
 * keys like any other (a plain object would set its prototype or find Object.prototype's). */
export function callsRecord(
  calls: readonly (readonly CallRecord[])[],
): Record<string, [number, number | null, string]> {
  const out: Record<string, [number, number | null, string]> = Object.create(null);
  for (const c of calls) for (const r of c) out[r[0]] = [r[1], r[2], r[3]];
  return out;
}

/** A chunk withCalls copied: the one it replaced (undefined for a new chunk) and the indices it
 * changed there (undefined: any, after a drop at the front). */
export interface ChunkEdit {
  prev?: CallRecord[];
  keys?: number[];
}

export interface CallsResult {
  calls: CallRecord[][];
  /** The first chunk index where `calls` may differ from the input's. */
  from: number;
  /** Chunks copied or made, by their index in `calls`. */
  edits: Map<number, ChunkEdit>;
}

/**
 * `calls` with `added` put in order (a new id appended, a known one replaced where it is) and
 * then the oldest records dropped down to `max`. Returns the new list (the input itself when
 * nothing changed), where it starts to differ and what changed in each copied chunk, so the
 * caller can freeze and size it from the input's sizes (deep-freeze.ts freezeEdited) in
 * O(changed). O(added × chunks + chunks + CALL_CHUNK × chunks copied); `calls` is never changed.
 */
export function withCalls(calls: readonly CallRecord[][], added: readonly CallRecord[], max: number): CallsResult {
  const w = new CallsEdit(calls);
  for (const r of added) {
    const cur = w.out ?? calls;
    let at = -1;
    let j = -1;
    for (let i = cur.length - 1; i >= 0 && at < 0; i--) {
      j = indexIn(cur[i], r[0]);
      if (j >= 0) at = i;
    }
    if (at >= 0) {
      w.touch(at, j)[j] = r;
      continue;
    }
    const out = (w.out ??= [...calls]);
    const last = out.length - 1;
    if (last >= 0 && out[last].length < CALL_CHUNK) {
      const c = out[last];
      w.touch(last, c.length).push(r);
    } else {
      w.from = Math.min(w.from, out.length);
      w.edits.set(out.length, {});
      out.push([r]);
    }
  }
  const n = callCount(w.out ?? calls);
  if (n > max) {
    const out = (w.out ??= [...calls]);
    const edits = w.edits;
    let drop = n - max;
    let whole = 0;
    while (whole < out.length && out[whole].length <= drop) drop -= out[whole++].length;
    if (whole > 0) {
      out.splice(0, whole);
      // Indices shift: the copied chunks now sit `whole` lower.
      const moved = [...edits].filter(([i]) => i >= whole);
      edits.clear();
      for (const [i, e] of moved) edits.set(i - whole, e);
    }
    if (drop > 0) {
      w.touch(0, 0).splice(0, drop);
      // Every record of chunk 0 moved.
      (edits.get(0) as ChunkEdit).keys = undefined;
    }
    w.from = 0;
  }
  return { calls: w.out ?? (calls as CallRecord[][]), from: w.from, edits: w.edits };
}

/** withCalls' copy of the list of chunks as it goes. A class, not closures over locals: tsx
 * (esbuild keepNames) names every `const f = () =>`, a defineProperty of ~1 µs per call each. */
class CallsEdit {
  out: CallRecord[][] | undefined;
  from: number;
  readonly edits = new Map<number, ChunkEdit>();
  constructor(private readonly calls: readonly CallRecord[][]) {
    this.from = calls.length;
  }

  /** Chunk i, copied once per call; the index of the changed record noted. */
  touch(i: number, j: number): CallRecord[] {
    const out = (this.out ??= [...this.calls]);
    let e = this.edits.get(i);
    if (!e) {
      e = { prev: out[i], keys: [] };
      out[i] = [...out[i]];
      this.edits.set(i, e);
    }
    e.keys?.push(j);
    this.from = Math.min(this.from, i);
    return out[i];
  }
}

/** v1's `calls` record as v2 chunks, in the record's key order. O(records). */
export function fromV1Calls(calls: Readonly<Record<string, readonly [number, number | null, string]>>): CallRecord[][] {
  const out: CallRecord[][] = [];
  for (const id of Object.keys(calls)) {
    const [call, exit, hash] = calls[id];
    const last = out[out.length - 1];
    const r: CallRecord = [id, call, exit, hash];
    if (last && last.length < CALL_CHUNK) last.push(r);
    else out.push([r]);
  }
  return out;
}
