// Seam verification for segment tokens (segment-tokens.ts): two texts' ids may be joined only when
// encoding a window around their seam (the left text's last SEAM_WINDOW_CHARS characters and the
// right text's first ones) gives the window's sides' ids one after the other. The verdict is a pure
// function of the tokenizer and the two sides, so it is kept per handle; so are the sides' ids.
// Both live in generation memos (piece-memo.ts: an open-addressing table bounded by bytes, dropped
// whole when full) rather than in lru-caches: a growing agent session brings ~1 fresh window a call
// (a new tool output's last characters), and in an lru-cache each fresh side went into the shared
// id cache (encode-cache.ts: an insert that hashes, sizes and maybe evicts, ~3-5 µs, for a string
// no later call looks up) and each verdict was found by a per-seam key hashed in a 200k-entry LRU.
// Values are the same as before: a side's ids are the id cache's entry when it has one, else the
// encoder's (what encodeCached returned); a side longer than a memo key (PIECE_MEMO_MAX_CHARS)
// still goes through encodeCached, whose entries for such texts may come from verified parts.
// Cost: a verdict hit is one key of ≤ 2 × SEAM_WINDOW_CHARS + 1 characters built and hashed; a miss
// encodes the window once and each side not memoised once. Memory: VERDICT_MEMO_BYTES +
// SIDE_MEMO_BYTES per tokenizer handle and thread.
import type { TokenizerHandle } from './handle.ts';
import { peekEncoded, type CachedIds } from './encode-cache.ts';
import { PIECE_MEMO_MAX_CHARS, PieceMemo } from './piece-memo.ts';

/** Characters of context on each side of a seam in the verification window. */
export const SEAM_WINDOW_CHARS = 24;
/** Estimated heap the verdicts of one handle may hold (~40k seams) before the memo starts over. */
export const VERDICT_MEMO_BYTES = 8 * 1024 * 1024;
/** Estimated heap the side ids of one handle may hold before that memo starts over. */
export const SIDE_MEMO_BYTES = 4 * 1024 * 1024;
/** Heap per memoised id array beyond 8 bytes an id (header and elements' header). */
const ID_ARRAY_BYTES = 32;

interface SeamMemos {
  verdicts: PieceMemo<boolean>;
  sides: PieceMemo<CachedIds>;
}
const memos = new WeakMap<TokenizerHandle, SeamMemos>();

function memosOf(tok: TokenizerHandle): SeamMemos {
  let m = memos.get(tok);
  if (m === undefined) {
    m = { verdicts: new PieceMemo<boolean>(VERDICT_MEMO_BYTES), sides: new PieceMemo<CachedIds>(SIDE_MEMO_BYTES) };
    memos.set(tok, m);
  }
  return m;
}

/**
 * The ids of a short text (a seam window's side, a content's decoded tail): the handle's id cache
 * entry or encoding, as encodeCached gives them, memoised per handle without an id-cache insert.
 */
export function sideIds(tok: TokenizerHandle, text: string): CachedIds {
  if (text.length > PIECE_MEMO_MAX_CHARS) return tok.encodeCached(text);
  const { sides } = memosOf(tok);
  let ids = sides.get(text);
  if (ids === undefined) {
    ids = peekEncoded(tok.name, text) ?? Object.freeze(tok.encode(text));
    sides.set(text, ids, ID_ARRAY_BYTES + 8 * ids.length);
  }
  return ids;
}

/** Whether `left` and `right` encode apart as they do together, judged on the window around their seam. */
export function seamOk(tok: TokenizerHandle, left: string, right: string): boolean {
  const l = left.length > SEAM_WINDOW_CHARS ? left.slice(-SEAM_WINDOW_CHARS) : left;
  const r = right.length > SEAM_WINDOW_CHARS ? right.slice(0, SEAM_WINDOW_CHARS) : right;
  // l's length first: the key tells every (l, r) split of the same characters apart.
  const key = String.fromCharCode(l.length) + l + r;
  const { verdicts } = memosOf(tok);
  let ok = verdicts.get(key);
  if (ok === undefined) {
    ok = isConcat(tok.encode(l + r), sideIds(tok, l), sideIds(tok, r));
    verdicts.set(key, ok, 0);
  }
  return ok;
}

/** Whether `whole` is `a` followed by `b` (without building the concatenation). */
function isConcat(whole: readonly number[], a: CachedIds, b: CachedIds): boolean {
  if (whole.length !== a.length + b.length) return false;
  for (let i = 0; i < a.length; i++) if (whole[i] !== a[i]) return false;
  for (let i = 0; i < b.length; i++) if (whole[a.length + i] !== b[i]) return false;
  return true;
}
