// Engine-exact prompt tokens by segments (docs/architecture.md, "Tokens at the seams"): the rendered prompt is split at the
// template's special tokens (HF tokenizers split added tokens out before BPE, so nothing merges
// across them), each text segment's ids come from the lru-cache keyed by (tokenizer, content
// hash), and every seam is verified once by encoding a window around it (seam-check.ts); a seam that
// merges is reported and that stretch is re-encoded as whole text. Seams are verified when a segment is
// first encoded (a cached segment's seams were checked when it entered the cache).
// Incremental: given the previous call's ids and its cut points (run ends right after a special
// token) and how many leading characters the two texts share, the ids up to the last cut inside
// the shared prefix are copied and only the tail is split and looked up. Cost per call: O(tail)
// regex + cache lookups + one copy of the prefix ids (none when they grow in place, below); the whole
// text only without a previous call.
// A text piece missing from the cache is often a message's content in its template framing
// ("\n" + tool output + "\n", "user\n" + text): when that content is cached (the ledger counted
// it, or another session sent it), the piece's ids are its head's, the content's and its tail's,
// taken only when both seams are verified like any other seam.
// The ids come back as one Uint32Array (its backing store off the V8 heap): a session's previous
// call keeps them until its next one, and a number[] of 17k ids is 136 KB that every scavenge in
// between copies and then promotes; a typed array is a small wrapper over the same values.
// With `grow` (the event loop's calls; never a pool thread's, which transfers its buffer), the ids
// are a view at offset 0 of a buffer with room after them (ids-arena.ts): when the previous call's
// ids end where their buffer's written part ends and the tail begins with their last ids again
// (the usual agent call: the previous prompt's generation prompt opens this one's assistant turn),
// the tail's other ids are written after them in place and no prefix is copied: O(tail) per call
// instead of an O(prompt) copy into a fresh buffer (~0.3 ms at 17k ids on the bench's sessions).
import { LRUCache } from 'lru-cache';
import type { TokenizerHandle } from './handle.ts';
import { type CachedIds, lookupEncoded, peekEncoded, storeEncoded } from './encode-cache.ts';
import { extendInPlace, grownIds, writeRuns } from './ids-arena.ts';
import { SEAM_WINDOW_CHARS, seamOk, sideIds } from './seam-check.ts';

export { SEAM_WINDOW_CHARS };

const splitters = new WeakMap<TokenizerHandle, RegExp | null>();
const cutSafe = new WeakMap<TokenizerHandle, boolean>();

/**
 * Cutting after a special token splits the text the same way as the whole text only if no special
 * token contains another one (else a longer special could match across the cut). True for every
 * bundled tokenizer; checked once per handle.
 */
function cutsSafe(tok: TokenizerHandle): boolean {
  let ok = cutSafe.get(tok);
  if (ok === undefined) {
    const sp = tok.specialTokens;
    ok = !sp.some((a) => sp.some((b) => a !== b && b.includes(a)));
    cutSafe.set(tok, ok);
  }
  return ok;
}

function splitter(tok: TokenizerHandle): RegExp | null {
  let re = splitters.get(tok);
  if (re === undefined) {
    const specials = [...tok.specialTokens].sort((a, b) => b.length - a.length);
    re = specials.length
      ? new RegExp('(' + specials.map((s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|') + ')', 'g')
      : null;
    splitters.set(tok, re);
  }
  return re;
}

export interface SegmentTokens {
  /** One packed array of its own (never a view into another array's buffer: a pool thread transfers it);
   *  with TokenReuse.grow, a view at offset 0 of a buffer with room after it (ids-arena.ts). */
  ids: Uint32Array;
  segments: number;
  /** Seams whose window encoding differed from the concatenation (re-encoded as whole text). */
  mergedSeams: number;
  /** Ids emitted by runs that end at or before `markChar` (a lower bound of the tokens there). */
  tokensBeforeMark: number;
  /** Run ends right after a special token: character offsets and ids emitted up to there. */
  cuts: TokenCuts;
  /** Leading ids copied from the previous call (0 when tokenised from scratch). */
  reusedTokens: number;
}

export interface TokenCuts {
  chars: number[];
  toks: number[];
}

/** The previous call's result and how many leading characters its text shares with this one. */
export interface TokenReuse {
  ids: ArrayLike<number>;
  cuts: TokenCuts;
  sharedChars: number;
  /** text.slice(from) without copying the whole text (RenderResult.sliceFrom); optional. */
  sliceFrom?: (from: number) => string;
  /** The new ids may be a view of a buffer with room after them, extending `ids`' buffer in place
   *  when they continue it (ids-arena.ts); only for callers that never transfer the buffer. */
  grow?: boolean;
}

/** Shortest framed content worth a split lookup; the head is a role line of at most this many characters. */
const MIN_FRAMED_CONTENT = 64;
const MAX_FRAME_HEAD = 24;
/** Trailing ids of the content re-encoded together with the frame's tail. */
const TAIL_IDS = 3;

/**
 * A piece's ids from the cache: the piece itself, or head + cached content + tail where the head
 * is the piece up to its first newline (a role line or a bare newline) and the tail a trailing
 * newline. The content's last few ids are re-encoded with the tail (")\n" + "\n" is one token
 * ")\n\n"): ids = head + content's ids but its last TAIL_IDS + encode(their text + tail), taken
 * only when their text ends the content, it encodes to those ids, and every seam verifies.
 * Otherwise the piece is encoded (and cached).
 */
function lookupPiece(tok: TokenizerHandle, p: string): { ids: CachedIds; hit: boolean } {
  const whole = peekEncoded(tok.name, p);
  if (whole) return { ids: whole, hit: true };
  const framed = p.length > MIN_FRAMED_CONTENT ? framedIds(tok, p) : undefined;
  if (framed) {
    // (a packed array goes into the cache as it is: nothing else holds it)
    storeEncoded(tok.name, p, framed);
    return { ids: framed, hit: false };
  }
  // An inline arrow: tsx names a `const encode = () =>` per call (~1 µs). Stored packed.
  return lookupEncoded(tok.name, (t) => tok.encode(t), p, true);
}

function framedIds(tok: TokenizerHandle, p: string): CachedIds | undefined {
  const nl = p.indexOf('\n');
  const head = nl >= 0 && nl < MAX_FRAME_HEAD ? p.slice(0, nl + 1) : '';
  const tail = p.endsWith('\n') ? '\n' : '';
  const inner = p.slice(head.length, p.length - tail.length);
  if (inner.length < MIN_FRAMED_CONTENT || (!head && !tail)) return undefined;
  const innerIds = peekEncoded(tok.name, inner);
  if (!innerIds || innerIds.length <= TAIL_IDS) return undefined;
  let keep = innerIds.length;
  let core = inner;
  let rest = '';
  if (tail) {
    keep -= TAIL_IDS;
    // (a plain array: the cached ids may be a Uint32Array, and decode takes an array)
    const dropped: number[] = [];
    for (let i = keep; i < innerIds.length; i++) dropped.push(innerIds[i]);
    const end = decodeTail(tok, dropped);
    if (!end || !inner.endsWith(end)) return undefined;
    core = inner.slice(0, inner.length - end.length);
    const endIds = sideIds(tok, end);
    // The content's ids split where its last TAIL_IDS begin, else its leading ids are not the core's.
    if (endIds.length !== dropped.length || endIds.some((v, i) => v !== dropped[i]) || !seamOk(tok, core, end))
      return undefined;
    rest = end + tail;
  }
  if ((head && !seamOk(tok, head, core)) || (rest && !seamOk(tok, core, rest))) return undefined;
  const headIds = sideIds(tok, head);
  const restIds = rest ? sideIds(tok, rest) : NO_IDS;
  return joinPacked(headIds, innerIds, keep, restIds) ?? [...headIds, ...innerIds.slice(0, keep), ...restIds];
}

const NO_IDS: readonly number[] = Object.freeze([]);

/**
 * head ‖ inner[0, keep) ‖ rest written once into one packed array of their exact length (what the
 * cache stores: no growing array of the content's ids to push and then pack), or undefined when an
 * id is no uint32 (the caller then builds the plain array the cache keeps as it is).
 */
function joinPacked(head: CachedIds, inner: CachedIds, keep: number, rest: CachedIds): Uint32Array | undefined {
  const out = new Uint32Array(head.length + keep + rest.length);
  let o = 0;
  for (let i = 0; i < head.length; i++, o++) {
    const v = head[i];
    if (v !== v >>> 0) return undefined;
    out[o] = v;
  }
  if (inner instanceof Uint32Array) out.set(inner.subarray(0, keep), o);
  else
    for (let i = 0; i < keep; i++) {
      const v = inner[i];
      if (v !== v >>> 0) return undefined;
      out[o + i] = v;
    }
  o += keep;
  for (let i = 0; i < rest.length; i++, o++) {
    const v = rest[i];
    if (v !== v >>> 0) return undefined;
    out[o] = v;
  }
  return out;
}

/** Texts of recently decoded content tails, per handle (decode is pure; the library's costs ~10 µs
 *  for 3 ids: it scans the added tokens once per token). Tool outputs often end alike. */
const DECODED_TAILS = 4096;
const decodedTails = new WeakMap<TokenizerHandle, LRUCache<string, string>>();

function decodeTail(tok: TokenizerHandle, ids: number[]): string {
  // (a key only for uint32 ids: `join` writes undefined and null alike)
  if (!ids.every((v) => v === v >>> 0)) return tok.decode(ids);
  let memo = decodedTails.get(tok);
  if (memo === undefined) decodedTails.set(tok, (memo = new LRUCache<string, string>({ max: DECODED_TAILS })));
  const key = ids.join(',');
  let text = memo.get(key);
  if (text === undefined) {
    text = tok.decode(ids);
    memo.set(key, text);
  }
  return text;
}

/** Splits text into alternating [text, special, text, special, …] pieces (text may be ''). */
export function splitAtSpecials(tok: TokenizerHandle, text: string): string[] {
  const re = splitter(tok);
  return re ? text.split(re) : [text];
}

/**
 * A packed array of its own (own ArrayBuffer, offset 0: transferable) left uninitialised: the
 * caller writes every element. `new Uint32Array(n)` zero-fills its ~50-70 kB first, every call.
 */
function packedIds(n: number): Uint32Array {
  const b = Buffer.allocUnsafeSlow(n * 4);
  return new Uint32Array(b.buffer, b.byteOffset, n);
}

export function tokenizeBySegments(
  tok: TokenizerHandle,
  text: string,
  markChar: number = text.length,
  reuse?: TokenReuse,
): SegmentTokens {
  if (reuse && cutsSafe(tok)) {
    // Last cut inside the shared prefix (and not past the mark, whose count the prefix then holds).
    const limit = Math.min(reuse.sharedChars, markChar, text.length);
    const { chars, toks } = reuse.cuts;
    let lo = 0;
    let hi = chars.length - 1;
    let k = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (chars[mid] <= limit) (k = mid), (lo = mid + 1);
      else hi = mid - 1;
    }
    if (k >= 0 && toks[k] <= reuse.ids.length) {
      const at = chars[k];
      const slice = reuse.sliceFrom ?? ((from: number) => text.slice(from));
      const seamFrom = Math.max(0, at - SEAM_WINDOW_CHARS);
      const withBefore = slice(seamFrom);
      const tail = fromPieces(
        tok,
        splitAtSpecials(tok, withBefore.slice(at - seamFrom)),
        markChar - at,
        toks[k],
        at,
        { chars: chars.slice(0, k + 1), toks: toks.slice(0, k + 1) },
        withBefore.slice(0, at - seamFrom),
      );
      if (tail) {
        // One allocation for the whole id array: the reused prefix copied, the tail's cached
        // segment ids written straight after it (no growing array of the tail's ids).
        const n = toks[k];
        const prev = reuse.ids;
        let ids = reuse.grow && prev instanceof Uint32Array ? extendInPlace(prev, n, tail.count, tail.runs) : undefined;
        if (ids === undefined) {
          ids = reuse.grow ? grownIds(tail.count) : packedIds(tail.count);
          if (prev instanceof Uint32Array) ids.set(prev.subarray(0, n));
          else for (let i = 0; i < n; i++) ids[i] = prev[i];
          writeRuns(ids, n, tail.runs);
        }
        return {
          ids,
          segments: tail.segments,
          mergedSeams: tail.mergedSeams,
          tokensBeforeMark: tail.tokensBeforeMark,
          cuts: tail.cuts,
          reusedTokens: n,
        };
      }
    }
  }
  const r = fromPieces(tok, splitAtSpecials(tok, text), markChar, 0, 0, { chars: [], toks: [] }, undefined)!;
  const ids = new Uint32Array(r.count);
  writeRuns(ids, 0, r.runs);
  return {
    ids,
    segments: r.segments,
    mergedSeams: r.mergedSeams,
    tokensBeforeMark: r.tokensBeforeMark,
    cuts: r.cuts,
    reusedTokens: 0,
  };
}

/** What fromPieces found: each run's ids (cached arrays, not copied) and the id count after them. */
interface PieceRuns extends Omit<SegmentTokens, 'reusedTokens' | 'ids'> {
  runs: CachedIds[];
  /** Ids before the pieces plus those of every run. */
  count: number;
}

/**
 * Runs the segment algorithm over `pieces` (starting with a text piece), after `count` ids already
 * emitted (counts and cuts include them; the runs' ids are the caller's to write). `before` is the
 * text just before the pieces when they continue a reused prefix: the seam there is checked like
 * any other seam next to a fresh piece; undefined is returned when it merges (the caller then
 * tokenises the whole text).
 */
function fromPieces(
  tok: TokenizerHandle,
  pieces: string[],
  markChar: number,
  count: number,
  base: number,
  cuts: TokenCuts,
  before: string | undefined,
): PieceRuns | undefined {
  let mergedSeams = 0;
  let tokensBeforeMark = count;
  let chars = 0;
  let i = 0;
  const runs: CachedIds[] = [];
  const looked = pieces.map((p) => lookupPiece(tok, p));
  if (before !== undefined && before !== '' && pieces[0] !== '' && !looked[0].hit && !seamOk(tok, before, pieces[0]))
    return undefined;
  while (i < pieces.length) {
    // Grow a run while its seams merge: the run is then encoded as one text. Only seams next to a
    // freshly encoded piece are checked.
    let run = pieces[i];
    let j = i;
    let segIds = looked[i].ids;
    while (
      j + 1 < pieces.length &&
      pieces[j + 1] !== '' &&
      run !== '' &&
      (!looked[j].hit || !looked[j + 1].hit || j > i) &&
      !seamOk(tok, run, pieces[j + 1])
    ) {
      run += pieces[++j];
      mergedSeams++;
    }
    if (j > i) segIds = tok.encodeCached(run);
    if (segIds.length > 0) runs.push(segIds);
    count += segIds.length;
    chars += run.length;
    if (chars <= markChar) tokensBeforeMark = count;
    // Pieces alternate text/special from a text piece, so an odd last index ends on a special.
    if (j % 2 === 1 && run !== '') {
      cuts.chars.push(base + chars);
      cuts.toks.push(count);
    }
    i = j + 1;
  }
  return { runs, count, segments: pieces.length, mergedSeams, tokensBeforeMark, cuts };
}
