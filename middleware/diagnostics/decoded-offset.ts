// Character offset of prompt token `t` for cache-break diagnostics: decode(ids[0..t)).length, the
// figure `messageAtChar` places in the rendered text. Decoding the whole prefix on every break cost
// ~1.6 ms at 15k tokens, so a session keeps the decoded length at a few token positions (each right
// after a special token) and a break decodes only from the last kept position before it.
// Exact because the HF ByteLevel decoder (the bundled tokenizers') decodes the byte runs between
// added tokens separately and joins the pieces with '': decode(a ++ b) === decode(a) + decode(b)
// whenever `a` ends with an added token (checked per position: the id must be a special token's
// single id). Tokenizers not known to decode that way decode the whole prefix, as before.
// Cost per break: O(tokens since the kept position) decoded, O(tokens up to it) compared as
// integers (the kept position is trusted only where the ids up to it are the same), O(kept) memo.
import type { TokenizerHandle } from '../tokens/handle.ts';

/** Decoded lengths at token positions that follow a special token, ascending by token. */
export interface DecodedMarks {
  toks: number[];
  chars: number[];
}

/** Kept positions per session (the newest ones; a break before all of them decodes from 0). */
export const DECODED_MARKS_MAX = 32;
/** Tokens between the marks a break leaves on the stretch it decodes. */
export const MARK_SPAN = 1024;

/**
 * Bundled tokenizers whose tokenizer.json decoder is a plain ByteLevel one (tested against the
 * shipped files): the only ones whose decoding is additive after an added token.
 */
const ADDITIVE_AT_SPECIALS: ReadonlySet<string> = new Set(['qwen3', 'llama3_1', 'deepseek_v3']);

const specialIdSets = new WeakMap<TokenizerHandle, ReadonlySet<number>>();

/** Ids of the handle's special tokens (each encoding to one id: an added token). */
function specialIds(tok: TokenizerHandle): ReadonlySet<number> {
  let set = specialIdSets.get(tok);
  if (!set) {
    const ids = new Set<number>();
    for (const s of tok.specialTokens) {
      const e = tok.encode(s);
      if (e.length === 1) ids.add(e[0]);
    }
    set = ids;
    specialIdSets.set(tok, set);
  }
  return set;
}

function decodeRange(tok: TokenizerHandle, ids: Uint32Array, from: number, to: number): number {
  return to <= from ? 0 : tok.decode(Array.from(ids.subarray(from, to))).length;
}

/** Leading ids equal in a and b, not scanning past `limit`; the first `from` are known equal. */
function sameUpTo(a: ArrayLike<number>, b: ArrayLike<number>, limit: number, from: number): boolean {
  if (a.length < limit || b.length < limit) return false;
  for (let i = Math.min(from, limit); i < limit; i++) if (a[i] !== b[i]) return false;
  return true;
}

export interface DecodedOffsetInput {
  tok: TokenizerHandle;
  ids: Uint32Array;
  /** Marks measured on `prevIds` (the previous call's prompt), with the ids they were measured on. */
  prev?: { ids: ArrayLike<number>; marks: DecodedMarks };
  /** Leading ids known equal in ids and prev.ids. */
  floor: number;
}

/**
 * decode(ids[0..t)).length plus the marks this call can keep (those of `prev` still valid for
 * `ids` up to t, and the last special-token position before t). Marks are undefined for
 * tokenizers whose decoding is not known to be additive.
 */
export function decodedOffset(o: DecodedOffsetInput, t: number): { chars: number; marks?: DecodedMarks } {
  const { tok, ids } = o;
  if (!ADDITIVE_AT_SPECIALS.has(tok.name)) return { chars: decodeRange(tok, ids, 0, t) };
  const marks: DecodedMarks = { toks: [], chars: [] };
  let baseTok = 0;
  let baseChars = 0;
  const pm = o.prev?.marks;
  if (pm && o.prev) {
    let k = pm.toks.length - 1;
    while (k >= 0 && pm.toks[k] > t) k--;
    // Trusted only where this prompt's ids up to the mark are the ones it was measured on.
    if (k >= 0 && sameUpTo(o.prev.ids, ids, pm.toks[k], o.floor)) {
      for (let i = 0; i <= k; i++) {
        marks.toks.push(pm.toks[i]);
        marks.chars.push(pm.chars[i]);
      }
      baseTok = pm.toks[k];
      baseChars = pm.chars[k];
    }
  }
  // The last position in (baseTok, t] right after a special token becomes a new mark.
  const specials = specialIds(tok);
  let cut = t;
  while (cut > baseTok && !specials.has(ids[cut - 1])) cut--;
  if (cut <= baseTok) return { chars: baseChars + decodeRange(tok, ids, baseTok, t), marks };
  // On the way there, a mark every MARK_SPAN tokens or so: a later break before this one (an
  // edit, a rewind) then decodes from a nearer mark instead of from the start.
  let at = baseTok;
  let atCut = baseChars;
  for (let next = at + MARK_SPAN; next < cut; next = at + MARK_SPAN) {
    let q = next;
    while (q < cut && !specials.has(ids[q - 1])) q++;
    if (q >= cut) break;
    atCut += decodeRange(tok, ids, at, q);
    marks.toks.push(q);
    marks.chars.push(atCut);
    at = q;
  }
  atCut += decodeRange(tok, ids, at, cut);
  marks.toks.push(cut);
  marks.chars.push(atCut);
  if (marks.toks.length > DECODED_MARKS_MAX) {
    marks.toks.splice(0, marks.toks.length - DECODED_MARKS_MAX);
    marks.chars.splice(0, marks.chars.length - DECODED_MARKS_MAX);
  }
  return { chars: atCut + decodeRange(tok, ids, cut, t), marks };
}

/** The marks a call keeps for the next one: those at or before `common` (ids known equal there). */
export function keepMarks(marks: DecodedMarks | undefined, common: number): DecodedMarks | undefined {
  if (!marks) return undefined;
  let n = 0;
  while (n < marks.toks.length && marks.toks[n] <= common) n++;
  if (n === 0) return undefined;
  return n === marks.toks.length ? marks : { toks: marks.toks.slice(0, n), chars: marks.chars.slice(0, n) };
}
