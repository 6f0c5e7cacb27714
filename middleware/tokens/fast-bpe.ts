// A faster encode for Hugging Face byte-level BPE tokenizers (@lenml/tokenizers, a port of
// transformers.js) that gives the library's ids. The library's encode walks, per text: the
// added-token splitter, the normalizer, every pre-tokenizer stage, BPE per pre-token (cached) and
// a vocabulary lookup per token, building arrays of strings at each step; in a profile of growing
// agent sessions that plumbing, not the merges, was most of the ~2 µs per token. Here the
// library's own added-token trie (walked only from characters an added token starts with),
// normalizer and every pre-tokenizer stage but the last still cut the text, so the pieces are the
// library's (a lone Split stage, as in Qwen and Llama 3, by walking its own compiled pattern in
// place rather than through match objects and piece arrays, and by character codes where the text
// is ASCII: ascii-split.ts); each piece's ids (last stage, BPE,
// vocabulary) come from a bounded memo, as the library computes them per piece independently (its
// Sequence maps pieces one by one, BPE encodes each pre-token alone, the vocabulary maps each
// token alone). Code tool outputs repeat their words and indentation, so most pieces are one map
// lookup.
// Applies only where that independence holds by construction: a BPE model without unknown-token
// fusing, a Sequence pre-tokenizer ending in ByteLevel, no lowercasing or space removal, the base class's encode path.
// The caller still checks results against the library (hf-handle.ts). O(n) per text plus BPE per
// piece not seen before; memory bounded by PIECE_MEMO_MAX_BYTES per tokenizer and thread
// (piece-memo.ts: a generation cache dropped whole when full).
import { PieceMemo } from './piece-memo.ts';
import { ASK_REGEX, asciiPieceEnd, asciiSplitDigits } from './ascii-split.ts';

/** Heap per id in a number[] (8-byte elements). */
const ID_BYTES = 8;

/** A piece's memoised ids: a piece of one token (most are) is kept as that id alone, not as an
 *  array of one: no array per entry for the scavenger to copy and promote; else the array. */
export type PieceIds = number | readonly number[];

/** Ids the id buffer keeps its capacity for between texts. */
const SCRATCH_KEEP = 1 << 16;

/**
 * The ids of the text being encoded, written over one array kept from text to text (the encode is
 * synchronous and never re-entered) and copied out at their exact length: a fresh array per text
 * regrew ~1.5x at a time (2-3 copies of its ids), and `length = 0` would drop the capacity.
 */
class IdBuffer {
  private a: number[] = [];
  n = 0;

  push(id: number): void {
    if (this.n < this.a.length) this.a[this.n] = id;
    else this.a.push(id);
    this.n++;
  }

  pushIds(ids: PieceIds): void {
    if (typeof ids === 'number') this.push(ids);
    else for (const id of ids) this.push(id);
  }

  /** The ids written since the buffer was last emptied, as an array of their own; then empties it. */
  take(): number[] {
    const ids = this.a.slice(0, this.n);
    // A long text's capacity is not kept between texts.
    if (this.a.length > SCRATCH_KEEP) this.a = [];
    this.n = 0;
    return ids;
  }
}

interface PreTokenizerLike {
  pre_tokenize: (input: string | string[], options?: unknown) => string[];
  tokenizers?: PreTokenizerLike[];
  byte_encoder?: unknown;
  text_encoder?: unknown;
  /** A Split stage's JSON settings and compiled pattern. */
  config?: { type?: unknown; invert?: unknown; behavior?: unknown };
  pattern?: unknown;
}

/** A Split stage's pattern, to walk its matches without match objects (see splitPieces). */
interface SplitWalk {
  /** Matches only at lastIndex: `test` says whether a piece starts there and sets where it ends. */
  sticky: RegExp;
  /** Finds the next match (only after text no match covers: rare). */
  search: RegExp;
  /** Qwen's and Llama 3's pattern is read by character codes where the text is ASCII
   *  (ascii-split.ts): its longest digit run, else 0 (the regex at every piece). */
  asciiDigits: number;
}

/**
 * A Split stage the library runs as its regexSplit (matches and the text between them, in order,
 * each its own piece; used for every behaviour but "removed", without invert), or undefined.
 */
function splitWalk(stage: PreTokenizerLike, asciiScan: boolean): SplitWalk | undefined {
  const c = stage.config;
  const re = stage.pattern;
  if (c?.type !== 'Split' || c.invert || !(re instanceof RegExp)) return undefined;
  if (typeof c.behavior === 'string' && c.behavior.toLowerCase() === 'removed') return undefined;
  const flags = re.flags.replace(/[gy]/g, '');
  return {
    sticky: new RegExp(re.source, `${flags}y`),
    search: new RegExp(re.source, `${flags}g`),
    asciiDigits: asciiScan ? asciiSplitDigits(re) : 0,
  };
}

interface ModelLike {
  (tokens: string[]): string[];
  fuse_unk?: boolean;
  bpe?: unknown;
  tokens_to_ids?: unknown;
  convert_tokens_to_ids: (tokens: string[]) => number[];
}

interface AddedTokenLike {
  lstrip?: boolean;
  rstrip?: boolean;
}

interface AddedSplitter {
  split: (text: string) => string[];
  /** Its trie of added tokens: a node per character (null-prototype objects), `end` the token ending there. */
  trie?: unknown;
}

interface TrieNode {
  [ch: string]: TrieNode | string | undefined;
}

/**
 * The library's added-token split (its DictionarySplitter.split, same steps) that skips, with one
 * table lookup, every character no added token starts with: the library walks its trie from every
 * character, ~20 ns each, about a sixth of an encode of code text; where all added tokens start
 * with one character, indexOf finds the next place to walk from. The library's own split where
 * the trie is not of that shape.
 */
function addedTokenSplit(splitter: AddedSplitter, byIndexOf: boolean): (text: string) => string[] {
  const trie = splitter.trie as TrieNode | undefined;
  const library = (text: string): string[] => splitter.split(text);
  if (!trie || typeof trie !== 'object' || Object.getPrototypeOf(trie) !== null) return library;
  const starts = new Uint8Array(0x10000);
  const first = Object.keys(trie);
  for (const k of first) {
    if (k.length !== 1) return library;
    starts[k.charCodeAt(0)] = 1;
  }
  // Where every added token starts with one character ('<' in Qwen, Llama 3, DeepSeek V3), the
  // next candidate is found by indexOf (V8 scans a flat string for one character in bulk): on a
  // code tool output ~0.3 µs instead of ~2.5 µs for the table lookup per character.
  const only = byIndexOf && first.length === 1 ? first[0] : undefined;
  return (text: string): string[] => {
    const out: string[] = [];
    const r = text.length;
    let from = 0;
    let i = 0;
    while (i < r) {
      if (only !== undefined) {
        const next = text.indexOf(only, i);
        if (next < 0) break;
        i = next;
      } else if (starts[text.charCodeAt(i)] === 0) {
        i++;
        continue;
      }
      // From here on the library's loop: the longest added token starting at i, if any.
      let node: TrieNode | string | undefined = trie;
      let found: string | undefined;
      for (let u = i; u < r; u++) {
        node = (node as TrieNode)[text[u]];
        if (node === undefined) break;
        const end = (node as TrieNode).end;
        if (end) found = end as string;
      }
      if (found) {
        if (i > from) out.push(text.slice(from, i));
        out.push(found);
        i += found.length;
        from = i;
      } else i++;
    }
    if (from < r) out.push(text.slice(from));
    return out;
  };
}

/** Any UTF-16 code unit at or above U+0300 (the first combining mark): a text without one is
 *  NFC already (see nfcSkippingStable). */
const MAY_CHANGE_UNDER_NFC = /[^\u0000-\u02ff]/;

/**
 * The library's normalizer, except that an NFC one (Qwen's) returns a text with no code unit at or
 * above U+0300 as it is, without the library's `text.normalize('NFC')`: every code point below
 * U+0300 is a starter (combining class 0) that NFC keeps, and no two of them compose (composition
 * needs a combining mark or a Hangul jamo, all above), so that normalize returns the same string.
 * On a 1.7k-character code tool output that normalize took ~9.8 µs, the test ~0.2 µs (same-run,
 * loaded 2-core host). test/middleware/tokens-nfc-stable.test.ts checks every code point and every
 * ordered pair below U+0300.
 * Any other normalizer, or a text with a code unit from U+0300 on, goes to the library's.
 */
export function nfcSkippingStable(normalizer: ((text: string) => string) | null): ((text: string) => string) | null {
  const n = normalizer as unknown as { config?: { type?: unknown }; form?: unknown; normalize?: unknown } | null;
  if (n === null || n.config?.type !== 'NFC' || n.form !== 'NFC' || typeof n.normalize !== 'function')
    return normalizer;
  const library = normalizer as (text: string) => string;
  return (text: string): string => (MAY_CHANGE_UNDER_NFC.test(text) ? library(text) : text);
}

interface LibraryTokenizer {
  added_tokens_splitter?: AddedSplitter;
  added_tokens_map?: Map<string, AddedTokenLike>;
  remove_space?: boolean;
  do_lowercase_and_remove_accent?: boolean;
  normalizer: ((text: string) => string) | null;
  pre_tokenizer: PreTokenizerLike | null;
  model: ModelLike;
  _encode_text?: unknown;
  _tokenize_helper?: unknown;
  _encode_plus?: unknown;
  encode?: unknown;
}

/** True when `name` is defined once along the object's prototype chain (no subclass overrides it). */
function definedOnce(obj: object, name: string): boolean {
  let n = 0;
  for (let p = Object.getPrototypeOf(obj); p && p !== Object.prototype; p = Object.getPrototypeOf(p))
    if (Object.hasOwn(p, name)) n++;
  return n === 1;
}

/** Settings of the fast encode (benchmarks and tests compare them). */
export interface FastBpeOptions {
  /** Splits ASCII text by character codes where the pattern is Qwen's or Llama 3's (default true). */
  asciiScan?: boolean;
  /** Finds added tokens by indexOf where they all start with one character (default true). */
  addedIndexOf?: boolean;
}

/** The fast encode (text → ids, as tok.encode(text, { add_special_tokens: false }) should give),
 * or undefined where the tokenizer is not of the shape above. */
export function fastBpeEncoder(
  library: unknown,
  memo: PieceMemo<PieceIds> = new PieceMemo(),
  opts: FastBpeOptions = {},
): ((text: string) => number[]) | undefined {
  const tok = library as LibraryTokenizer;
  if (!tok || (typeof tok !== 'object' && typeof tok !== 'function')) return undefined;
  const { added_tokens_splitter: splitter, added_tokens_map: addedMap, model, pre_tokenizer: pre } = tok;
  if (!splitter || !(addedMap instanceof Map) || typeof model !== 'function') return undefined;
  // A BPE model (the library's bundles minify class names: recognised by its members).
  if (typeof model.bpe !== 'function' || !(model.tokens_to_ids instanceof Map)) return undefined;
  if (model.fuse_unk || typeof model.convert_tokens_to_ids !== 'function') return undefined;
  if (tok.remove_space === true || tok.do_lowercase_and_remove_accent) return undefined;
  for (const m of ['_encode_text', '_tokenize_helper', '_encode_plus', 'encode'])
    if (!definedOnce(tok, m)) return undefined;
  const stages = pre?.tokenizers;
  if (!Array.isArray(stages) || stages.length < 2) return undefined;
  const cut = stages.slice(0, -1);
  const last = stages[stages.length - 1];
  // ByteLevel maps each piece alone and reads no options (section_index), so a piece is its key.
  if (last.byte_encoder === undefined || last.text_encoder === undefined) return undefined;
  const normalizer = nfcSkippingStable(tok.normalizer);
  const splitAdded = addedTokenSplit(splitter, opts.addedIndexOf !== false);
  // One Split stage before ByteLevel (Qwen, Llama 3): its pieces are walked in place.
  const walk = cut.length === 1 ? splitWalk(cut[0], opts.asciiScan !== false) : undefined;

  const pieceIds = (piece: string, options: unknown): PieceIds => {
    const known = memo.get(piece);
    if (known !== undefined) return known;
    return encodePiece(piece, options);
  };

  // A piece the memo does not hold: the library's last stage, BPE and vocabulary, then memoised.
  const encodePiece = (piece: string, options: unknown): PieceIds => {
    const ids = model.convert_tokens_to_ids(model(last.pre_tokenize([piece], options)));
    // (an id that is no number, as the library's unknown-token id can be, stays in its array)
    const value = ids.length === 1 && typeof ids[0] === 'number' ? ids[0] : ids;
    // Charged as an array either way: the memo holds as many entries as before, in less heap.
    memo.set(piece, value, ids.length * ID_BYTES);
    return value;
  };

  // The library's regexSplit collects every match object (an array with index, input and groups)
  // and every piece in arrays: the largest allocation of an encode. This walks the same matches
  // with `test` (no match object), or reads the match's end by character codes where the text is
  // ASCII (ascii-split.ts, which asks for `test` wherever the answer depends on a code unit from
  // U+0080 on), and appends each piece's ids as it goes. Same pieces: a match
  // at `at` is what a search from `at` finds first; where none starts at `at`, the search finds
  // the next one and the text before it is a piece, as there. An empty match (none of the
  // bundled patterns has one) returns false and the caller splits the library's way.
  // The ids of each one-character ASCII piece, once seen (128 entries at most, never dropped).
  const single: (PieceIds | undefined)[] = new Array<PieceIds | undefined>(128).fill(undefined);
  const splitPieces = (w: SplitWalk, x: string, options: unknown, out: IdBuffer): boolean => {
    const n = x.length;
    const digits = w.asciiDigits;
    let at = 0;
    while (at < n) {
      let end = digits === 0 ? ASK_REGEX : asciiPieceEnd(x, at, digits);
      if (end === ASK_REGEX) {
        w.sticky.lastIndex = at;
        if (w.sticky.test(x)) end = w.sticky.lastIndex;
      }
      if (end !== ASK_REGEX) {
        if (end === at) return false;
        const c = x.charCodeAt(at);
        if (end === at + 1 && c < 128 && digits !== 0) {
          // One ASCII character (~40 % of a code text's pieces): its ids by its code, no hash.
          let ids = single[c];
          if (ids === undefined) single[c] = ids = pieceIds(x[at], options);
          out.pushIds(ids);
          at = end;
          continue;
        }
        // Looked up where it lies: a slice only for a piece the memo does not hold.
        const known = memo.getRange(x, at, end);
        out.pushIds(known !== undefined ? known : encodePiece(x.slice(at, end), options));
        at = end;
        continue;
      }
      w.search.lastIndex = at;
      const m = w.search.exec(x);
      const next = m ? m.index : n;
      if (m && m[0].length === 0) return false;
      out.pushIds(pieceIds(x.slice(at, next), options));
      at = next;
    }
    return true;
  };

  const out = new IdBuffer();
  return (text: string): number[] => {
    out.n = 0;
    const sections = splitAdded(text);
    // As the library: an added token that strips eats the neighbouring section's whitespace.
    for (let i = 0; i < sections.length; ++i) {
      const added = addedMap.get(sections[i]);
      if (!added) continue;
      if (added.lstrip && i > 0) sections[i - 1] = sections[i - 1].trimEnd();
      if (added.rstrip && i < sections.length - 1) sections[i + 1] = sections[i + 1].trimStart();
    }
    for (let s = 0; s < sections.length; s++) {
      let x = sections[s];
      if (x.length === 0) continue;
      if (addedMap.has(x)) {
        for (const id of model.convert_tokens_to_ids([x])) out.push(id);
        continue;
      }
      if (normalizer !== null) x = normalizer(x);
      if (x.length === 0) continue;
      const options = { section_index: s };
      if (walk !== undefined) {
        const mark = out.n;
        if (splitPieces(walk, x, options, out)) continue;
        out.n = mark;
      }
      let pieces: string[] = [x];
      for (const stage of cut) pieces = stage.pre_tokenize(pieces, options);
      for (const p of pieces) out.pushIds(pieceIds(p, options));
    }
    return out.take();
  };
}
