// Token counts of big texts taken off the event loop: a stage that must count a call's new tool
// outputs (the ledger; compaction with a budget) hands the texts of at least OFFLOAD_COUNT_MIN_CHARS
// characters to a render pool thread (gateway/workers-pool/, a `count` job through the same fair
// queue and per-tenant limits as a render) and counts the smaller ones itself, yielding the event
// loop after every COUNT_SLICE_CHARS characters. One text cannot be cut (a count over a cut could
// differ at the cut), so without the pool a single 1M-character output is one ~0.1-0.5 s BPE pass
// on the loop that serves every tenant; with it the loop only clones the strings to the thread.
// Exactness: the thread runs the same tokenizer (same name and template, loaded by the same
// registry) and counts with the handle's own cached encode, so each count is the one an inline
// `encodeCached(t).length` gives while the fast BPE path agrees with the library on both threads
// (hf-handle.ts checks it on each thread separately; a mismatch found on either is counted and logged).
// poolCounter: a text shorter than the pool's min_chars is counted inline (its call may render
// here, and that render reuses the ids an inline count cached). A text counted on the pool is in no
// cache of this thread, and a later stage (compaction counts the whole history on every call of a
// budgeted model) would count it here again: its count is remembered under the tenant and a SHA-256
// of the text (~1.2 ms CPU per 1M characters, as SHA-1's; no text is kept), at most COUNT_MEMO_ENTRIES texts, least
// recently used forgotten first. Per tenant and SHA-256, not SHA-1 across tenants: a hash stands for
// the text here, so a colliding pair (practical for SHA-1) planted by one tenant must not give
// another tenant's text its count (a wrong count moves eviction and compaction decisions).
// Cost on the loop: O(texts) to split, one structured clone of the big texts, one SHA-256 of each
// big text; the rest is the inline counts of the small texts, in slices.
import { createHash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import { yieldToLoop } from './time-slices.ts';

/** A text this long or longer is counted on a pool thread when the call has one (else in slices). */
export const OFFLOAD_COUNT_MIN_CHARS = 32_768;
/** Characters counted inline between two yields (~1.6 ms of BPE at ~50 ns a character). */
export const COUNT_SLICE_CHARS = 32_768;

/** Big texts whose counts a pipeline remembers (each entry: the tenant, a 43-character hash and a number). */
export const COUNT_MEMO_ENTRIES = 4096;

/** What a pool thread gets for a count job: the tokenizer as the render job names it, and the texts. */
export interface CountJob {
  tokenizer: string;
  chatTemplateFile?: string;
  texts: string[];
}

/** The thread's answer: one count per text, in order. */
export interface CountReply {
  tokens: number[];
}

/** Something that counts texts off the event loop (the render pool). */
export interface CountOffload {
  count(job: CountJob, meta: { tenant: string; affinity: string }): Promise<CountReply>;
}

/** A stage's view of it: counts for these texts (rejects with a GatewayError in the caller's shape). */
export type CountTexts = (texts: string[]) => Promise<number[]>;

/**
 * Each distinct text's count: the big ones on `offload` (when given) while the small ones are
 * counted with `count` here, yielding the event loop after every COUNT_SLICE_CHARS characters.
 */
export async function countInSlices(
  texts: readonly string[],
  count: (text: string) => number,
  offload?: CountTexts,
): Promise<Map<string, number>> {
  const counted = new Map<string, number>();
  const big: string[] = [];
  const small: string[] = [];
  const seen = new Set<string>();
  for (const t of texts) {
    if (seen.has(t)) continue;
    seen.add(t);
    (offload && t.length >= OFFLOAD_COUNT_MIN_CHARS ? big : small).push(t);
  }
  // Sent first: the thread counts while this thread counts the small ones.
  const away = big.length > 0 && offload ? offload(big) : undefined;
  // Settled even when a slice below throws, so a rejection is never left unhandled.
  away?.catch(() => undefined);
  let slice = 0;
  for (const t of small) {
    if (slice >= COUNT_SLICE_CHARS) {
      await yieldToLoop();
      slice = 0;
    }
    counted.set(t, count(t));
    slice += t.length;
  }
  if (away) {
    const tokens = await away;
    for (let i = 0; i < big.length; i++) counted.set(big[i], tokens[i]);
  }
  return counted;
}

/**
 * A pipeline's count jobs: `forCall(tenant, affinity, inline)` is one call's CountTexts. Texts shorter
 * than `minChars` (the pool's own render threshold: such a call may render here, and the render
 * reuses the ids an inline count cached) are counted with `inline`; the others on `pool`, their counts
 * remembered per tenant and text (by SHA-256) for its later calls, so a text asked again costs no job.
 */
export function poolCounter(
  pool: CountOffload,
  base: Omit<CountJob, 'texts'>,
  minChars: number,
): (tenant: string, affinity: string, inline: (text: string) => number) => CountTexts {
  const memo = new LRUCache<string, number>({ max: COUNT_MEMO_ENTRIES });
  return (tenant, affinity, inline) => async (texts) => {
    // the hash has a fixed length: no two (hash, tenant) pairs give one key
    const keyOf = (t: string): string => createHash('sha256').update(t).digest('base64url') + tenant;
    const out: number[] = new Array(texts.length);
    const keys: string[] = [];
    const missing: string[] = [];
    const at: number[] = [];
    for (let i = 0; i < texts.length; i++) {
      const t = texts[i];
      if (t.length < minChars) {
        out[i] = inline(t);
        continue;
      }
      const k = keyOf(t);
      const n = memo.get(k);
      if (n !== undefined) out[i] = n;
      else {
        keys.push(k);
        missing.push(t);
        at.push(i);
      }
    }
    if (missing.length === 0) return out;
    const { tokens } = await pool.count({ ...base, texts: missing }, { tenant, affinity });
    for (let j = 0; j < at.length; j++) {
      out[at[j]] = tokens[j];
      memo.set(keys[j], tokens[j]);
    }
    return out;
  };
}
