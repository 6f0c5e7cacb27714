// Engine-exact prompt tokens by segments (DESIGN §3): the rendered prompt is split at the
// template's special tokens (HF tokenizers split added tokens out before BPE, so nothing merges
// across them), each text segment's ids come from the lru-cache keyed by (tokenizer, content
// hash), and every seam is verified once by encoding a window around it; a seam that merges is
// reported and that stretch is re-encoded as whole text. Cost per call: one regex pass + one sha1
// per segment over the prompt, BPE only for segments never seen before. Seams are verified when a
// segment is first encoded (a cached segment's seams were checked when it entered the cache).
import { LRUCache } from 'lru-cache';
import type { TokenizerHandle } from './handle.ts';
import { lookupEncoded } from './encode-cache.ts';

/** Characters of context on each side of a seam in the verification window. */
export const SEAM_WINDOW_CHARS = 24;
const seamVerdicts = new LRUCache<string, boolean>({ max: 200_000 });
const splitters = new WeakMap<TokenizerHandle, RegExp | null>();

function splitter(tok: TokenizerHandle): RegExp | null {
  let re = splitters.get(tok);
  if (re === undefined) {
    const specials = [...tok.specialTokens].sort((a, b) => b.length - a.length);
    re = specials.length ? new RegExp('(' + specials.map((s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|') + ')', 'g') : null;
    splitters.set(tok, re);
  }
  return re;
}

export interface SegmentTokens {
  ids: number[];
  segments: number;
  /** Seams whose window encoding differed from the concatenation (re-encoded as whole text). */
  mergedSeams: number;
  /** Ids emitted by runs that end at or before `markChar` (a lower bound of the tokens there). */
  tokensBeforeMark: number;
}

/** Splits text into alternating [text, special, text, special, …] pieces (text may be ''). */
export function splitAtSpecials(tok: TokenizerHandle, text: string): string[] {
  const re = splitter(tok);
  return re ? text.split(re) : [text];
}

function seamOk(tok: TokenizerHandle, left: string, right: string): boolean {
  const l = left.slice(-SEAM_WINDOW_CHARS);
  const r = right.slice(0, SEAM_WINDOW_CHARS);
  const key = tok.name + '\u0000' + l + '\u0001' + r;
  let ok = seamVerdicts.get(key);
  if (ok === undefined) {
    const whole = tok.encode(l + r);
    const parts = tok.encode(l).concat(tok.encode(r));
    ok = whole.length === parts.length && whole.every((v, i) => v === parts[i]);
    seamVerdicts.set(key, ok);
  }
  return ok;
}

export function tokenizeBySegments(tok: TokenizerHandle, text: string, markChar: number = text.length): SegmentTokens {
  const pieces = splitAtSpecials(tok, text);
  const ids: number[] = [];
  let mergedSeams = 0;
  let tokensBeforeMark = 0;
  let chars = 0;
  let i = 0;
  const encode = (t: string): number[] => tok.encode(t);
  const looked = pieces.map((p) => lookupEncoded(tok.name, encode, p));
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
    for (let k = 0; k < segIds.length; k++) ids.push(segIds[k]);
    chars += run.length;
    if (chars <= markChar) tokensBeforeMark = ids.length;
    i = j + 1;
  }
  return { ids, segments: pieces.length, mergedSeams, tokensBeforeMark };
}
