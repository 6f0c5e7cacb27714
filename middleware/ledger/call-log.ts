// The ledger's per-call audit records (LedgerState.calls, LEDGER_SLOT v2): one record per tool
// call, [id, action number, exit code, output hash], in the order the calls were first seen, kept
// as chunks of at most CALL_CHUNK records. The state a store holds is frozen and shared with the
// next call, so adding a record copies the list of chunks and the last chunk (O(calls / CALL_CHUNK
// + CALL_CHUNK), ~64 + 64 pointers at the 4,096-record bound) where a JSON record keyed by id
// had to be copied whole (O(calls)). A record whose id is already there is replaced in place (its
// chunk copied), as the key of a record would keep its place. Dropping the oldest records (the
// bound) copies the first chunk. Finding an id: one Set per chunk, built once per frozen chunk in
// this process (O(CALL_CHUNK)), then O(chunks) lookups.
// v1 kept the records as `Record<id, [call, exit, hash]>`; fromV1Calls turns one into chunks in
// its key order (the order v1 trimmed by).
import type { CallRecord } from './types.ts';

/** Records per chunk: √ of the record bound, so a call's copies are balanced at the bound. */
export const CALL_CHUNK = 64;

const idSets = new WeakMap<readonly CallRecord[], Set<string>>();

function idsOf(chunk: readonly CallRecord[]): Set<string> {
  let s = idSets.get(chunk);
  if (!s) {
    s = new Set();
    for (const r of chunk) s.add(r[0]);
    // Only a frozen chunk stays as it is; a chunk still being built is not remembered.
    if (Object.isFrozen(chunk)) idSets.set(chunk, s);
  }
  return s;
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
    const c = calls[i];
    if (idsOf(c).has(id)) for (const r of c) if (r[0] === id) return r;
  }
  return undefined;
}

/** The records as a v1-style record keyed by id (for readers that look ids up many times). */
export function callsRecord(
  calls: readonly (readonly CallRecord[])[],
): Record<string, [number, number | null, string]> {
  const out: Record<string, [number, number | null, string]> = {};
  for (const c of calls) for (const r of c) out[r[0]] = [r[1], r[2], r[3]];
  return out;
}

/**
 * `calls` with `added` put in order (a new id appended, a known one replaced where it is) and
 * then the oldest records dropped down to `max`. Returns the new list (the same one when nothing
 * changed) and the first chunk index where it may differ from `calls` (for freezeEdited).
 * O(added × chunks + chunks + CALL_CHUNK × chunks touched); `calls` is never changed.
 */
export function withCalls(
  calls: readonly CallRecord[][],
  added: readonly CallRecord[],
  max: number,
): { calls: CallRecord[][]; from: number } {
  let out: CallRecord[][] | undefined;
  let from = calls.length;
  // Chunks this call already copied (their index in `out`), so each is copied once.
  const own = new Set<number>();
  const chunkAt = (i: number): CallRecord[] => {
    out ??= [...calls];
    if (!own.has(i)) {
      out[i] = [...out[i]];
      own.add(i);
    }
    from = Math.min(from, i);
    return out[i];
  };
  for (const r of added) {
    const cur = out ?? calls;
    let at = -1;
    for (let i = cur.length - 1; i >= 0 && at < 0; i--) if (idsOf(cur[i]).has(r[0])) at = i;
    if (at >= 0) {
      const c = chunkAt(at);
      c[c.findIndex((x) => x[0] === r[0])] = r;
      // A copied chunk is not frozen: its id set is built anew next time (same ids).
      continue;
    }
    out ??= [...calls];
    const last = out.length - 1;
    if (last >= 0 && out[last].length < CALL_CHUNK) chunkAt(last).push(r);
    else {
      from = Math.min(from, out.length);
      own.add(out.length);
      out.push([r]);
    }
  }
  const n = callCount(out ?? calls);
  if (n > max) {
    out ??= [...calls];
    let drop = n - max;
    let whole = 0;
    while (whole < out.length && out[whole].length <= drop) drop -= out[whole++].length;
    if (whole > 0) {
      out.splice(0, whole);
      // Indices shift: every chunk may sit at another index now.
      const shifted = [...own].map((i) => i - whole).filter((i) => i >= 0);
      own.clear();
      for (const i of shifted) own.add(i);
    }
    if (drop > 0) chunkAt(0).splice(0, drop);
    from = 0;
  }
  return out ? { calls: out, from } : { calls: calls as CallRecord[][], from };
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
