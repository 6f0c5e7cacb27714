// Speeds up the pre-tokenizer of Hugging Face BPE tokenizers (@lenml/tokenizers, a port of
// transformers.js) without changing a single id. After the Split regex cuts a text into
// pre-tokens, ByteLevel maps each one to its byte-alphabet string (UTF-8 encode, one table lookup
// and one string per byte), and every stage flattens its output with Array#flat: in a profile of
// growing agent sessions these were most of encode time, while BPE merges are already cached by
// the library per pre-token. Agents' tool outputs repeat the same words, identifiers and
// indentation runs, so a bounded map from pre-token to mapped string turns most of the mapping
// into one lookup, and the one-level flattening becomes a plain loop. Exact: the mapping is a pure
// function of its input string (its settings are fixed at load) and the flattening keeps flat()'s
// one-level semantics. O(1) per pre-token on a hit; memory bounded by PIECE_MEMO_MAX_BYTES per
// ByteLevel pre-tokenizer (piece-memo.ts: a generation cache dropped whole when full).
import { PIECE_MEMO_MAX_CHARS, PieceMemo } from './piece-memo.ts';

/** Heap per mapped string beyond its characters (a string header and its array slot). */
const MAPPED_STRING_BYTES = 32;

interface PreTokenizerLike {
  pre_tokenize_text?: (text: string, options?: unknown) => unknown[];
  pre_tokenize?: (input: string | string[], options?: unknown) => unknown[];
  byte_encoder?: unknown;
  text_encoder?: unknown;
  tokenizers?: unknown[];
}

/** The library's pre_tokenize (map, then flat()) for an array input, as one loop. */
function flatLoop(node: PreTokenizerLike, text: (s: string, options?: unknown) => unknown[]): void {
  const original = node.pre_tokenize?.bind(node);
  if (!original) return;
  node.pre_tokenize = (input: string | string[], options?: unknown): unknown[] => {
    if (!Array.isArray(input)) return original(input, options);
    const out: unknown[] = [];
    for (const piece of input) for (const s of text(piece, options)) out.push(s);
    return out;
  };
}

/**
 * Memoises every ByteLevel pre-tokenizer under `root` (a Sequence holds its stages in
 * `tokenizers`) and replaces flat() by a loop in every stage; returns how many were memoised.
 */
export function memoiseByteLevel(root: unknown, maxBytes?: number): number {
  const node = root as PreTokenizerLike | null | undefined;
  // the library's pre-tokenizers are callable objects (functions)
  if (!node || (typeof node !== 'object' && typeof node !== 'function')) return 0;
  let n = 0;
  if (Array.isArray(node.tokenizers)) for (const t of node.tokenizers) n += memoiseByteLevel(t, maxBytes);
  const inner = node.pre_tokenize_text?.bind(node);
  if (!inner) return n;
  if (node.byte_encoder === undefined || node.text_encoder === undefined) {
    flatLoop(node, inner);
    return n;
  }
  const memo = new PieceMemo<unknown[]>(maxBytes);
  // Returns the memo's own array: callers copy it.
  const mapped = (text: string, options?: unknown): unknown[] => {
    if (text.length > PIECE_MEMO_MAX_CHARS) return inner(text, options);
    let out = memo.get(text);
    if (!out) {
      out = inner(text, options);
      // The mapped strings: about 1 character per UTF-16 unit of the text, up to 3 per unit, 2 bytes each.
      memo.set(text, out, out.length * MAPPED_STRING_BYTES + 6 * text.length);
    }
    return out;
  };
  node.pre_tokenize_text = (text: string, options?: unknown): unknown[] => mapped(text, options).slice();
  flatLoop(node, mapped);
  return n + 1;
}
