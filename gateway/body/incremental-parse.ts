// Incremental request-body parse: an agent resends its whole history each call, so a body shares
// most of its bytes with an earlier body of its session. Given such an earlier body (its bytes,
// the offsets of its top-level members and array elements, and its parsed values), the bytes both
// share from the start are compared (memcmp), the earlier parsed value of every member or array
// element lying wholly in that common prefix is reused, and only the rest is JSON.parsed: the new
// bytes with each reused value replaced by a `0` placeholder, which is then swapped back.
//
// Exact: the result is what JSON.parse(buf) returns, value for value (the reused parts are the
// earlier call's objects, so identity is shared with it: nobody mutates a parsed message, stages
// copy on write; layout/resent.ts relies on the same). Why it is exact: the bytes before a reused
// value are the same as in the earlier (valid) body, so a parser is in the same state there and
// reads the same value from the same bytes; a value wholly in the prefix ends with `}`, `]` or `"`
// (self-delimiting) or before the first differing byte. Replacing a complete value with `0` keeps
// the document valid or invalid, and the nesting depth check (limits.max_json_depth) is run on the
// bytes from where reuse ends with the nesting known there; the earlier body passed it. Anything
// unusual (a duplicate top-level key, `__proto__`, a scan that does not understand the bytes, an
// error) falls back to the full parse, which also decides every invalid body's error.
// Cost: O(common prefix) native memcmp + O(new bytes) scan and parse + O(members + elements).
import { jsonDepth } from '../limits/json-depth.ts';
import { type Member, type Resume, scanMembers } from './json-members.ts';

const QUOTE = 0x22;
const CLOSE_OBJ = 0x7d;
const CLOSE_ARR = 0x5d;
const OPEN_OBJ = 0x7b;
const OPEN_ARR = 0x5b;
/** Bytes compared per native call; the first chunk that differs is then halved (one native call
 * a halving) down to BYTE_RUN bytes, which are compared one by one. */
const CHUNK = 4096;
const BYTE_RUN = 16;

/** A parsed body kept to parse a later one against. */
export interface ParsedBody {
  bytes: Buffer;
  members: Member[];
  /** Each member's parsed value, index-aligned with `members`. */
  values: unknown[];
  /** Array members' elements (a copy, so a later change to the array cannot reach it). */
  items: (unknown[] | undefined)[];
}

export type ParseOutcome =
  | { value: unknown; record?: ParsedBody; reused: number; extended?: boolean; error?: undefined }
  | { error: 'depth' | 'json'; value?: undefined; record?: undefined; reused?: undefined; extended?: undefined };

/**
 * Length of the common prefix of `a` and `b`, known to be at least `from`. `guess`: a length they
 * likely share (where the earlier body's last array element ends: an agent's next body extends
 * it), checked with one memcmp first.
 */
export function commonPrefix(a: Buffer, b: Buffer, from = 0, guess = 0): number {
  const n = Math.min(a.length, b.length);
  let i = from;
  if (guess > i && guess <= n && a.compare(b, i, guess, i, guess) === 0) i = guess;
  while (i + CHUNK <= n && a.compare(b, i, i + CHUNK, i, i + CHUNK) === 0) i += CHUNK;
  // [from, i) is equal and the first difference, if any, lies before hi: halve [i, hi).
  let hi = Math.min(n, i + CHUNK);
  while (hi - i > BYTE_RUN) {
    const mid = (i + hi) >>> 1;
    if (a.compare(b, i, mid, i, mid) === 0) i = mid;
    else hi = mid;
  }
  while (i < n && a[i] === b[i]) i++;
  return i;
}

/** Where the last element of `p`'s last array member ends (commonPrefix's guess). */
export function lastElementEnd(p: ParsedBody): number {
  for (let i = p.members.length - 1; i >= 0; i--) {
    const e = p.members[i].elems;
    if (e !== undefined && e.length > 0) return e[e.length - 1];
  }
  return 0;
}

/** The record of a parsed body, or undefined when it cannot serve as one (not a plain object
 * with unique keys, or the scan and the parse disagree). */
function recordOf(bytes: Buffer, members: Member[] | undefined, value: unknown): ParsedBody | undefined {
  if (members === undefined || value === null || typeof value !== 'object' || Array.isArray(value)) return undefined;
  const o = value as Record<string, unknown>;
  if (Object.keys(o).length !== members.length) return undefined;
  const values: unknown[] = [];
  const items: (unknown[] | undefined)[] = [];
  for (const m of members) {
    if (!Object.hasOwn(o, m.key)) return undefined;
    const v = o[m.key];
    values.push(v);
    if (m.elems === undefined) items.push(undefined);
    else if (Array.isArray(v) && v.length * 2 === m.elems.length) items.push(v.slice());
    else return undefined;
  }
  return { bytes, members, values, items };
}

/** JSON.parse with the depth check first, as the gateway always did; `keep` also builds the record. */
export function parseFull(buf: Buffer, maxDepth: number, keep: boolean): ParseOutcome {
  if (jsonDepth(buf, maxDepth) > maxDepth) return { error: 'depth' };
  let value: unknown;
  try {
    value = JSON.parse(buf.toString('utf8'));
  } catch {
    return { error: 'json' };
  }
  return { value, record: keep ? recordOf(buf, scanMembers(buf), value) : undefined, reused: 0 };
}

function holdsUserTurn(items: readonly unknown[] | undefined, k: number): boolean {
  for (let i = 0; i < k; i++) if ((items?.[i] as { role?: unknown } | null)?.role === 'user') return true;
  return false;
}

function isContainer(c: number): boolean {
  return c === OPEN_OBJ || c === OPEN_ARR;
}

/** Whether the value at [s, e) of the earlier body is read the same from a body sharing `common` bytes. */
function inPrefix(bytes: Buffer, s: number, e: number, common: number): boolean {
  if (e < common) return true;
  if (e > common || e <= s) return false;
  const last = bytes[e - 1];
  return last === CLOSE_OBJ || last === CLOSE_ARR || last === QUOTE;
}

/**
 * `buf` parsed against `prev`, with which it shares `common` leading bytes; undefined when nothing
 * can be reused or anything is unusual (the caller then parses in full).
 */
export function parseAgainst(
  buf: Buffer,
  prev: ParsedBody,
  common: number,
  maxDepth: number,
): ParseOutcome | undefined {
  const pm = prev.members;
  const pb = prev.bytes;
  let j = 0;
  while (j < pm.length && inPrefix(pb, pm[j].vs, pm[j].ve, common)) j++;
  const open = pm[j];
  let k = 0;
  if (open?.elems !== undefined) {
    const e = open.elems;
    while (2 * k < e.length && inPrefix(pb, e[2 * k], e[2 * k + 1], common)) k++;
  }
  // Messages are shared only within a conversation, as the pipeline's own intern shares them
  // (layout/resent.ts keys on the first user message): a reused run must hold a user turn, so two
  // sessions that share only a system prompt never share its object (per-object memos that hold
  // one session's derivation, like session-id.ts's, would trade it back and forth).
  if (k > 0 && !holdsUserTurn(prev.items[j], k)) k = 0;
  if (j === 0 && k === 0) return undefined;
  const resume: Resume =
    k > 0
      ? {
          members: pm.slice(0, j),
          open: { ...open, ve: -1, elems: open.elems!.slice(0, 2 * k), ec: open.ec!.slice(0, k) },
          pos: open.elems![2 * k - 1],
        }
      : { members: pm.slice(0, j), pos: pm[j - 1].ve };
  const members = scanMembers(buf, resume);
  if (members === undefined) return undefined;
  if (jsonDepth(buf, maxDepth, resume.pos, k > 0 ? 2 : 1) > maxDepth) return { error: 'depth' };
  const keys = new Set<string>();
  for (const m of members) keys.add(m.key);
  if (keys.size !== members.length || keys.has('__proto__')) return undefined;
  // The text to parse: the new bytes with each reused value (objects and arrays: nothing is gained
  // on a primitive) and the run of reused elements replaced by `0`s. Members after the divergence
  // (a `tools` array sent after `messages`) are reused too when their bytes equal the earlier
  // body's value of the same key: a complete value reads the same wherever it stands.
  const pieces: string[] = [];
  const swaps: [string, unknown][] = [];
  let at = 0;
  let reused = 0;
  for (let i = 0; i < j; i++) {
    const m = pm[i];
    if (!isContainer(pb[m.vs])) continue;
    pieces.push(buf.toString('utf8', at, m.vs), '0');
    swaps.push([m.key, prev.values[i]]);
    reused += m.ve - m.vs;
    at = m.ve;
  }
  if (k > 0) {
    const e = open.elems!;
    pieces.push(buf.toString('utf8', at, e[0]), k === 1 ? '0' : `${'0,'.repeat(k - 1)}0`);
    reused += e[2 * k - 1] - e[0];
    at = e[2 * k - 1];
  }
  for (let i = k > 0 ? j + 1 : j; i < members.length; i++) {
    const m = members[i];
    if (!isContainer(buf[m.vs])) continue;
    let p = 0;
    while (p < pm.length && pm[p].key !== m.key) p++;
    const q = pm[p];
    if (q === undefined || q.ve - q.vs !== m.ve - m.vs || buf.compare(pb, q.vs, q.ve, m.vs, m.ve) !== 0) continue;
    pieces.push(buf.toString('utf8', at, m.vs), '0');
    swaps.push([m.key, prev.values[p]]);
    reused += m.ve - m.vs;
    at = m.ve;
  }
  pieces.push(buf.toString('utf8', at));
  let value: Record<string, unknown>;
  try {
    value = JSON.parse(pieces.join('')) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return undefined;
  for (const [key, v] of swaps) value[key] = v;
  if (k > 0) {
    const arr = value[open.key];
    const from = prev.items[j];
    if (!Array.isArray(arr) || from === undefined || arr.length < k) return undefined;
    for (let i = 0; i < k; i++) arr[i] = from[i];
  }
  // Every element of the array the bodies diverged in was reused: the new body extends the old one.
  const extended = k > 0 && 2 * k === open.elems!.length;
  return { value, record: recordOf(buf, members, value), reused, extended };
}
