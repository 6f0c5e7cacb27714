// Tokenizer handle over a Hugging Face tokenizer.json + tokenizer_config.json (@lenml/tokenizers,
// a port of transformers.js). Encoding passes add_special_tokens=false: vLLM's chat path renders the
// template (which already emits BOS where the model wants it) and tokenises without adding more.
// Loading parses the JSON once (~0.3 s for a 150k vocab); the library's encode is ~2 µs per token,
// the memoised one (fast-bpe.ts) a fraction of that. The fast encode is checked against the
// library on a tokenizer's first FAST_CHECK_FIRST texts and one in FAST_CHECK_EVERY after: a
// difference switches it off for that tokenizer and the library's ids are returned, is counted
// (fastEncodeCounts: ctxgate_tokenizer_fast_encodes_total) and told to the listeners
// (onFastMismatch: the gateway logs a warning), once per tokenizer handle. A check of one of the
// first texts that falls on a text longer than FAST_CHECK_MAX_CHARS moves to the next text within
// it: the library encoder takes ~0.4 s over 1M characters, on the event loop of every tenant, and
// short texts exercise the same pre-tokenizer and merges. A sampled check after those compares
// both encoders on a window of at most FAST_CHECK_SAMPLE_CHARS of the text (its start moving from
// one check to the next), not on the whole text: it runs inside the call that encodes the text,
// and a whole 1.7k-character tool output through the library costs ~2 ms of CPU, on ~1 % of the
// calls of a growing agent session (2.4 new texts a call): the one-connection p99 (bench overhead).
// The window is cut between code points, never inside a surrogate pair.
import { TokenizerLoader } from '@lenml/tokenizers';
import { ChatRenderer, type RenderOptions, type TokenizerHandle } from './handle.ts';
import { countCachedWith, encodeCachedWith } from './encode-cache.ts';
import { encodeBounded } from './long-runs.ts';
import { memoiseByteLevel } from './byte-level-memo.ts';
import { fastBpeEncoder } from './fast-bpe.ts';
import { compactBpeModel } from './compact-bpe-model.ts';
import type { ChatMessage } from '../types.ts';

/** Texts of a tokenizer whose fast ids are all compared with the library's. */
export const FAST_CHECK_FIRST = 32;
/** After those, one text in this many is compared. */
export const FAST_CHECK_EVERY = 256;
/** A due check of one of the first texts on a longer text waits for the next text of at most this many characters. */
export const FAST_CHECK_MAX_CHARS = 32768;
/** A sampled check (after the first texts) compares the encoders on at most this many characters
 *  of the text (~0.6 ms of the library's CPU, where a whole 1.7k-character text takes ~2 ms). */
export const FAST_CHECK_SAMPLE_CHARS = 512;
/** How far a sampled window's start moves on from one check to the next (a prime, in characters). */
const SAMPLE_STRIDE = 4099;

/** Fast encodes by outcome, all tokenizers: `mismatched` switched one off. */
export const fastEncodeCounts = { fast: 0, checked: 0, mismatched: 0 };

/** What switched a tokenizer's fast encode off. */
export interface FastMismatch {
  tokenizer: string;
  /** Length of the text whose ids differed (never the text: it may hold secrets). */
  chars: number;
  reason: 'differs' | 'threw';
}

const mismatchListeners = new Set<(m: FastMismatch) => void>();

/** Calls `fn` on each fast-path mismatch (each switches one tokenizer's fast path off); returns the unsubscribe. */
export function onFastMismatch(fn: (m: FastMismatch) => void): () => void {
  mismatchListeners.add(fn);
  return () => mismatchListeners.delete(fn);
}

function mismatched(m: FastMismatch): void {
  fastEncodeCounts.mismatched++;
  for (const fn of mismatchListeners) fn(m);
}

/** Adds what another thread's fast encodes counted (a render pool thread has its own copy of this
 *  module) and tells its mismatches to this thread's listeners, as if they had happened here. */
export function countFastEncodesFrom(fast: number, checked: number, mismatches: readonly FastMismatch[]): void {
  fastEncodeCounts.fast += fast;
  fastEncodeCounts.checked += checked;
  for (const m of mismatches) mismatched(m);
}

function sameIds(a: readonly number[], b: readonly number[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

const isHigh = (c: number): boolean => c >= 0xd800 && c <= 0xdbff;

/**
 * [start, end) of a window of at most FAST_CHECK_SAMPLE_CHARS of `text` starting near `offset`
 * (modulo the room there is), neither end inside a surrogate pair; undefined when the whole text
 * fits. O(1).
 */
export function sampleWindow(text: string, offset: number): [number, number] | undefined {
  const room = text.length - FAST_CHECK_SAMPLE_CHARS;
  if (room <= 0) return undefined;
  let start = offset % (room + 1);
  if (start > 0 && isHigh(text.charCodeAt(start - 1))) start--;
  let end = start + FAST_CHECK_SAMPLE_CHARS;
  if (isHigh(text.charCodeAt(end - 1))) end--;
  return [start, end];
}

/** `fast` where it gives `library`'s ids, checked on samples (see above); else `library`. */
export function checkedEncoder(
  library: (text: string) => number[],
  fast: ((text: string) => number[]) | undefined,
  tokenizer = 'unknown',
): (text: string) => number[] {
  if (!fast) return library;
  let on = true;
  let n = 0;
  // checks owed: texts that were due one but were too long to check
  let due = 0;
  return (text: string): number[] => {
    if (!on) return library(text);
    let ids: number[];
    try {
      ids = fast(text);
    } catch {
      on = false;
      mismatched({ tokenizer, chars: text.length, reason: 'threw' });
      return library(text);
    }
    fastEncodeCounts.fast++;
    n++;
    if (n <= FAST_CHECK_FIRST) due++;
    if (due > 0 && text.length <= FAST_CHECK_MAX_CHARS) {
      due--;
      fastEncodeCounts.checked++;
      const want = library(text);
      if (!sameIds(ids, want)) {
        on = false;
        mismatched({ tokenizer, chars: text.length, reason: 'differs' });
        return want;
      }
    } else if (n > FAST_CHECK_FIRST && n % FAST_CHECK_EVERY === 0) {
      fastEncodeCounts.checked++;
      const at = sampleWindow(text, (n / FAST_CHECK_EVERY) * SAMPLE_STRIDE);
      const sample = at === undefined ? text : text.slice(at[0], at[1]);
      let agree: boolean;
      try {
        agree = sameIds(at === undefined ? ids : fast(sample), library(sample));
      } catch {
        agree = false;
      }
      if (!agree) {
        on = false;
        mismatched({ tokenizer, chars: text.length, reason: 'differs' });
        return library(text);
      }
    }
    return ids;
  };
}

interface AddedTokenJson {
  content: string;
  lstrip?: boolean;
  rstrip?: boolean;
}

/** tokenizer_config.json stores bos/eos either as a string or as an AddedToken object. */
function tokenString(v: unknown): string | undefined {
  if (typeof v === 'string') return v;
  if (v && typeof v === 'object' && typeof (v as { content?: unknown }).content === 'string')
    return (v as { content: string }).content;
  return undefined;
}

function templateString(v: unknown): string | undefined {
  if (typeof v === 'string') return v;
  // Some configs ship a list of named templates; the engine picks "default".
  if (Array.isArray(v)) {
    const named = v as { name?: string; template?: string }[];
    return (named.find((t) => t.name === 'default') ?? named[0])?.template;
  }
  return undefined;
}

export function createHfHandle(
  name: string,
  tokenizerJSON: Record<string, unknown>,
  tokenizerConfig: Record<string, unknown>,
  chatTemplate?: string,
): TokenizerHandle {
  // The loader's types describe the full HF schema; the files are trusted as the engine trusts them.
  const tok = TokenizerLoader.fromPreTrained({
    tokenizerJSON: tokenizerJSON as Parameters<typeof TokenizerLoader.fromPreTrained>[0]['tokenizerJSON'],
    tokenizerConfig: tokenizerConfig as Parameters<typeof TokenizerLoader.fromPreTrained>[0]['tokenizerConfig'],
  });
  memoiseByteLevel((tok as unknown as { pre_tokenizer?: unknown }).pre_tokenizer);
  const source = chatTemplate ?? templateString(tokenizerConfig.chat_template);
  if (!source) throw new Error(`tokenizer ${name}: no chat template shipped; pass chatTemplateFile`);
  const bosToken = tokenString(tokenizerConfig.bos_token);
  const eosToken = tokenString(tokenizerConfig.eos_token);
  const renderer = new ChatRenderer(source, bosToken, eosToken);
  const added = (tokenizerJSON.added_tokens as AddedTokenJson[] | undefined) ?? [];
  // Only tokens that do not eat neighbouring whitespace are clean segment boundaries.
  const specialTokens = Object.freeze(
    added.filter((t) => !t.lstrip && !t.rstrip && t.content.length > 0).map((t) => t.content),
  );
  const library = (text: string): number[] => tok.encode(text, { add_special_tokens: false });
  const raw = checkedEncoder(library, fastBpeEncoder(tok), name);
  // After the fast encoder has looked at the library's structures: the vocabulary and merges as
  // flat tables from here on (a few objects for the old-generation GC to walk instead of ~750k).
  compactBpeModel((tok as unknown as { model?: unknown }).model);
  // Long letter/punctuation runs are encoded in pieces so BPE stays linear (long-runs.ts).
  const encode = (text: string): number[] => (text.length === 0 ? [] : encodeBounded(text, raw));
  return {
    name,
    encode,
    decode: (ids) =>
      ids.length === 0
        ? ''
        : tok.decode(ids as number[], { skip_special_tokens: false, clean_up_tokenization_spaces: false }),
    renderChat: (messages: ChatMessage[], opts?: RenderOptions) => renderer.render(messages, opts),
    specialTokens,
    bosToken,
    eosToken,
    templateSource: source,
    countTokens: (text) => countCachedWith(name, encode, text),
    encodeCached: (text) => encodeCachedWith(name, encode, text),
  };
}
