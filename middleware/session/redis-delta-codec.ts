// A session state as a small head plus content-addressed chunks, so the Redis store writes only
// what changed and reads only what it has not seen. Each stage part is described in the head: a
// small value inline, a big array or object (sizeOf >= SPLIT_MIN_CHARS) split into chunks of
// consecutive items (entries, for an object, in sorted key order), a big item described in
// place, to MAX_SPLIT_DEPTH levels. A chunk is the canonical JSON of its items, named by its
// sha256 (CHUNK_ID_HEX hex); the version is the sha256 of the head, which names every chunk, so
// equal versions mean equal states. Chunk boundaries are content-defined (a hash of the item
// and its size pick the last item of a chunk, aiming at CHUNK_TARGET_CHARS), so appending to an
// array, or adding keys to an object, leaves the other chunks as they were. Parts are deep-frozen
// (shared-parts.ts): what a frozen container encodes to is remembered, so an encode costs
// O(new objects + items of changed containers); a decode parses only the chunks it does not hold
// and rebuilds the containers from chunk values (pointer copies, no parse of what it held).
import * as crypto from 'node:crypto';
import { canonicalJson } from '../canonical-json.ts';
import { isDeepFrozen, sizeOf } from '../deep-freeze.ts';
import type { SessionState } from './store.ts';

/** Containers at least this big (sizeOf: JSON length, escapes not counted) are split. */
export const SPLIT_MIN_CHARS = 2048;
/** Containers at least this big, but not split, are one chunk of their own rather than inline in
 * the head (the head is written on every put; an unchanged chunk is not). */
export const INLINE_MAX_CHARS = 256;
/** The average chunk aimed at: an item this big or bigger always ends its chunk. */
export const CHUNK_TARGET_CHARS = 2048;
export const CHUNK_MAX_ITEMS = 256;
/** A chunk is cut here whatever its items say (rare: a long run of items none of which ends one). */
export const CHUNK_MAX_CHARS = 4 * CHUNK_TARGET_CHARS;
/** Characters hashed at each end of a long item to pick chunk ends. */
const HASHED_END_CHARS = 256;
export const MAX_SPLIT_DEPTH = 4;
/** Hex digits of sha256 naming a chunk or a version (128 bits). */
export const CHUNK_ID_HEX = 32;

/** How a value is stored: inline (`j`), whole in one chunk (`c`), an array of chunk ids and
 * described items (`a`), or an object whose small entries are in chunks (`o`) and big ones
 * described (`k`). */
export type Desc =
  | { j: unknown }
  | { c: string }
  | { a: (string | Desc)[] }
  | { o: string[]; k?: Record<string, Desc> };

/** A chunk's items: an array slice, or an object holding some entries (or, for `c`, the value). */
export type ChunkValue = readonly unknown[] | Readonly<Record<string, unknown>>;

export interface Encoded {
  head: string;
  version: string;
  /** Every chunk the state refers to: id → its items, UTF-8 bytes and (until written) text. */
  chunks: Map<string, Chunk>;
  /** UTF-8 bytes of the head and all chunks: what a whole write sends. */
  bytes: number;
  /** Where each chunk starts: pass to the next encode of this session. */
  index: ChunkIndex;
}

export interface Head {
  /** Top-level fields (owner, calls, ...). */
  t: Record<string, unknown>;
  /** Stage parts, absent when the state has no `stages`. */
  p?: Record<string, { v: number; d: Desc }>;
}

// One-shot hashing where Node has it (20.12+): no Hash object per chunk.
const oneShot = (crypto as { hash?: (alg: string, data: string) => string }).hash;
const idOf = (text: string): string =>
  (oneShot ? oneShot('sha256', text) : crypto.createHash('sha256').update(text).digest('hex')).slice(0, CHUNK_ID_HEX);

/** A chunk: its items, its UTF-8 bytes, and its text while it may still be written (dropped once
 * stored, so chunks held between calls cost pointers, not a second copy of the state's text). */
export type Chunk = { text?: string; value: ChunkValue; bytes: number };

/** A chunk's text (rebuilt from its items once dropped: the canonical JSON of its value). */
export const textOf = (c: Chunk): string => c.text ?? canonicalJson(c.value);
/** A chunk as made: its items (and keys, for an object), so a later encode finds it unchanged by
 * identity (===, a pointer compare for shared parts) instead of joining and hashing its text. */
type Made = { id: string; chunk: Chunk; items: readonly unknown[]; keys?: readonly string[] };
/** Chunks by where they start (container path and first key or index), carried from one encode of
 * a session to the next. */
export type ChunkIndex = Map<string, Made>;
type Memo = { desc: Desc; made: [string, Made][] };
const memo = new WeakMap<object, Memo>();
/** The last chunk made starting at a frozen object: finds chunks moved to another index. */
const byFirst = new WeakMap<object, Made>();

interface Ctx {
  out: Encoded['chunks'];
  prev?: ChunkIndex;
  next: ChunkIndex;
}

const sameItems = (m: Made, items: readonly unknown[], keys: readonly string[] | undefined): boolean =>
  m.items.length === items.length &&
  m.items.every((x, i) => x === items[i]) &&
  (keys === undefined ? m.keys === undefined : m.keys?.every((k, i) => k === keys[i]) === true);

/** The chunk of `items` (and, for an object, `keys`): found unchanged, or made. */
function chunkOf(at: string, items: readonly unknown[], keys: readonly string[] | undefined, ctx: Ctx): Made {
  const first = items[0];
  const memoable = typeof first === 'object' && first !== null && isDeepFrozen(first);
  let m = memoable ? byFirst.get(first) : undefined;
  if (!m || !sameItems(m, items, keys)) m = ctx.prev?.get(at);
  if (!m || !sameItems(m, items, keys)) {
    const texts = items.map((x, i) => {
      const t = x === undefined ? 'null' : canonicalJson(x);
      return keys ? `${JSON.stringify(keys[i])}:${t}` : t;
    });
    const text = keys ? `{${texts.join(',')}}` : `[${texts.join(',')}]`;
    const value: ChunkValue = keys ? Object.fromEntries(keys.map((k, i) => [k, items[i]])) : items;
    m = { id: idOf(text), chunk: { text, value, bytes: Buffer.byteLength(text) }, items, keys };
    if (memoable) byFirst.set(first, m);
  }
  ctx.next.set(at, m);
  ctx.out.set(m.id, m.chunk);
  return m;
}

const isBig = (v: unknown, depth: number): v is object =>
  typeof v === 'object' && v !== null && depth < MAX_SPLIT_DEPTH && sizeOf(v) >= SPLIT_MIN_CHARS;

/** An item's size (as sizeOf counts) if it ends its chunk, else its negated size: it does for
 * about one in CHUNK_TARGET_CHARS / size items, picked by a hash of the item's key and text (whole
 * when short, its ends when long), so the same item decides the same wherever it sits. */
function endsChunk(key: string | undefined, x: unknown): number {
  if (key === undefined && typeof x === 'object' && x !== null && isDeepFrozen(x)) {
    let e = ends.get(x);
    if (e === undefined) ends.set(x, (e = pickEnd(undefined, x)));
    return e;
  }
  return pickEnd(key, x);
}

/** endsChunk's answer for frozen array items (objects), remembered. */
const ends = new WeakMap<object, number>();

function pickEnd(key: string | undefined, x: unknown): number {
  const s = typeof x === 'string' ? x : typeof x === 'object' && x !== null ? canonicalJson(x) : String(x);
  const size = s.length + (key?.length ?? 0) + 4;
  const every = Math.floor(CHUNK_TARGET_CHARS / size);
  if (every <= 1) return size;
  let h = 0x811c9dc5 ^ size;
  if (key !== undefined) for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  const n = s.length;
  const long = n > 2 * HASHED_END_CHARS;
  for (let i = 0; i < n; i++) {
    if (long && i === HASHED_END_CHARS) i = n - HASHED_END_CHARS;
    h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  }
  h ^= h >>> 15;
  h = Math.imul(h, 0x2c1b3c6d);
  h ^= h >>> 12;
  return (h >>> 0) % every === 0 ? size : -size;
}

function encodeValue(v: unknown, depth: number, path: string, ctx: Ctx): Desc {
  if (typeof v !== 'object' || v === null || sizeOf(v) < INLINE_MAX_CHARS) return { j: v };
  const frozen = isDeepFrozen(v);
  const known = frozen ? memo.get(v) : undefined;
  if (known) {
    for (const [at, m] of known.made) {
      ctx.next.set(at, m);
      ctx.out.set(m.id, m.chunk);
    }
    return known.desc;
  }
  const made: Memo['made'] = [];
  const sub: Ctx = { out: ctx.out, prev: ctx.prev, next: new Map() };
  const desc = !isBig(v, depth)
    ? whole(v, sub)
    : Array.isArray(v)
      ? splitArray(v, depth, path, sub)
      : splitObject(v, depth, path, sub);
  for (const [at, m] of sub.next) {
    made.push([at, m]);
    ctx.next.set(at, m);
  }
  if (frozen) memo.set(v, { desc, made });
  return desc;
}

/** A value kept whole in one chunk (found again through the frozen value's memo). */
function whole(v: object, ctx: Ctx): Desc {
  const text = canonicalJson(v);
  const id = idOf(text);
  ctx.out.set(id, { text, value: v as ChunkValue, bytes: Buffer.byteLength(text) });
  ctx.next.set(`\u0000${id}`, { id, chunk: ctx.out.get(id)!, items: [v] });
  return { c: id };
}

function splitArray(v: readonly unknown[], depth: number, path: string, ctx: Ctx): Desc {
  const pieces: (string | Desc)[] = [];
  let from = 0;
  let chars = 0;
  const flush = (to: number): void => {
    if (to > from) pieces.push(chunkOf(`${path}\u0000${from}`, v.slice(from, to), undefined, ctx).id);
    from = to;
    chars = 0;
  };
  for (let i = 0; i < v.length; i++) {
    const x = v[i];
    if (isBig(x, depth + 1)) {
      flush(i);
      pieces.push(encodeValue(x, depth + 1, `${path}/${i}`, ctx));
      from = i + 1;
      continue;
    }
    const e = endsChunk(undefined, x);
    chars += Math.abs(e);
    if (e > 0 || chars >= CHUNK_MAX_CHARS || i + 1 - from >= CHUNK_MAX_ITEMS) flush(i + 1);
  }
  flush(v.length);
  return { a: pieces };
}

function splitObject(v: object, depth: number, path: string, ctx: Ctx): Desc {
  const obj = v as Record<string, unknown>;
  const ids: string[] = [];
  const big: Record<string, Desc> = {};
  let hasBig = false;
  let keys: string[] = [];
  let chars = 0;
  const flush = (): void => {
    chars = 0;
    if (keys.length === 0) return;
    ids.push(
      chunkOf(
        `${path}\u0000${keys[0]}`,
        keys.map((k) => obj[k]),
        keys,
        ctx,
      ).id,
    );
    keys = [];
  };
  for (const k of Object.keys(obj).sort()) {
    const x = obj[k];
    if (x === undefined) continue;
    if (isBig(x, depth + 1)) {
      big[k] = encodeValue(x, depth + 1, `${path}/${k}`, ctx);
      hasBig = true;
      continue;
    }
    keys.push(k);
    const e = endsChunk(k, x);
    chars += Math.abs(e);
    if (e > 0 || chars >= CHUNK_MAX_CHARS || keys.length >= CHUNK_MAX_ITEMS) flush();
  }
  flush();
  return hasBig ? { o: ids, k: big } : { o: ids };
}

/** The head and chunks of a frozen snapshot (shared-parts.ts snapshotOf); `prev`, the index the
 * last encode of this session returned, lets unchanged chunks of changed containers be found. */
export function encodeState(snapshot: SessionState, prev?: ChunkIndex): Encoded {
  // the write version is the store's, not part of the state (redis-delta-scripts.ts)
  const { stages, checksum: _c, version: _n, ...top } = snapshot;
  void _c;
  void _n;
  const chunks: Encoded['chunks'] = new Map();
  const ctx: Ctx = { out: chunks, prev, next: new Map() };
  let p: Head['p'];
  if (stages) {
    p = {};
    for (const name of Object.keys(stages))
      p[name] = { v: stages[name].v, d: encodeValue(stages[name].s, 0, JSON.stringify(name), ctx) };
  }
  const head = canonicalJson(p ? { t: top, p } : { t: top });
  let bytes = Buffer.byteLength(head);
  for (const c of chunks.values()) bytes += c.bytes;
  return { head, version: idOf(head), chunks, bytes, index: ctx.next };
}

export class CorruptStateError extends Error {}

/** The chunk ids a head refers to (throws CorruptStateError on a malformed head). */
export function parseHead(head: string, version: string): { head: Head; ids: Set<string> } {
  if (idOf(head) !== version) throw new CorruptStateError('head does not match its version');
  const h = JSON.parse(head) as Head;
  if (!isRecord(h) || !isRecord(h.t) || (h.p !== undefined && !isRecord(h.p)))
    throw new CorruptStateError('malformed head');
  const ids = new Set<string>();
  // The same order of cases as decodeState: a key that picks a case must hold that case's shape.
  const walk = (d: Desc): void => {
    if (!isRecord(d)) throw new CorruptStateError('malformed part');
    if ('j' in d) return;
    if ('c' in d) {
      if (typeof d.c !== 'string') throw new CorruptStateError('malformed part');
      ids.add(d.c);
      return;
    }
    if ('a' in d) {
      if (!Array.isArray(d.a)) throw new CorruptStateError('malformed part');
      for (const x of d.a) {
        if (typeof x === 'string') ids.add(x);
        else walk(x);
      }
      return;
    }
    if (!Array.isArray(d.o)) throw new CorruptStateError('malformed part');
    for (const x of d.o) {
      if (typeof x !== 'string') throw new CorruptStateError('malformed part');
      ids.add(x);
    }
    if (d.k !== undefined) {
      if (!isRecord(d.k)) throw new CorruptStateError('malformed part');
      for (const x of Object.values(d.k)) walk(x);
    }
  };
  for (const e of Object.values(h.p ?? {})) {
    if (!isRecord(e) || typeof e.v !== 'number') throw new CorruptStateError('malformed part');
    walk(e.d);
  }
  return { head: h, ids };
}

/** The state a head describes, from its chunks (every id parseHead listed must be there), and
 * the index an encode of the next version starts from (where each chunk sits, as encode sees it). */
export function decodeState(head: Head, chunk: (id: string) => Chunk): { state: SessionState; index: ChunkIndex } {
  const index: ChunkIndex = new Map();
  const at = (made: Memo['made'], where: string, m: Made): void => {
    index.set(where, m);
    made.push([where, m]);
  };
  const value = (d: Desc, path: string, made: Memo['made']): unknown => {
    if ('j' in d) return d.j;
    const own: Memo['made'] = [];
    let v: object;
    if ('c' in d) {
      const c = chunk(d.c);
      at(own, `\u0000${d.c}`, { id: d.c, chunk: c, items: [c.value] });
      v = c.value;
    } else if ('a' in d) {
      const out: unknown[] = [];
      for (const x of d.a) {
        if (typeof x !== 'string') {
          out.push(value(x, `${path}/${out.length}`, own));
          continue;
        }
        const c = chunk(x);
        if (!Array.isArray(c.value)) throw new CorruptStateError('array chunk expected');
        at(own, `${path}\u0000${out.length}`, { id: x, chunk: c, items: c.value });
        for (const y of c.value) out.push(y);
      }
      v = out;
    } else {
      const entries: [string, unknown][] = [];
      for (const id of d.o) {
        const c = chunk(id);
        if (Array.isArray(c.value)) throw new CorruptStateError('object chunk expected');
        const o = c.value as Record<string, unknown>;
        // Encode's order (sorted), not the parse's (integer-like keys first).
        const keys = Object.keys(o).sort();
        if (keys.length === 0) continue;
        at(own, `${path}\u0000${keys[0]}`, { id, chunk: c, items: keys.map((k) => o[k]), keys });
        for (const k of keys) entries.push([k, o[k]]);
      }
      if (d.k) for (const k of Object.keys(d.k)) entries.push([k, value(d.k[k], `${path}/${k}`, own)]);
      // Sorted as a parse of the canonical JSON would give them; fromEntries defines own
      // properties (a key "__proto__" stays data).
      entries.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
      v = Object.fromEntries(entries);
    }
    // The store freezes the state before anything else sees it: the next encode finds this value
    // unchanged by identity, as if it had encoded it.
    memo.set(v, { desc: d, made: own });
    made.push(...own);
    return v;
  };
  const state = { ...head.t } as unknown as SessionState;
  if (head.p) {
    const stages: NonNullable<SessionState['stages']> = {};
    for (const name of Object.keys(head.p))
      stages[name] = { v: head.p[name].v, s: value(head.p[name].d, JSON.stringify(name), []) };
    state.stages = stages;
  }
  return { state, index };
}

/** A chunk read from Redis: its text verified against its id, parsed. */
export function parseChunk(id: string, text: string): Chunk {
  if (idOf(text) !== id) throw new CorruptStateError('chunk does not match its id');
  const v = JSON.parse(text) as unknown;
  if (typeof v !== 'object' || v === null) throw new CorruptStateError('malformed chunk');
  return { value: v as ChunkValue, bytes: Buffer.byteLength(text) };
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
