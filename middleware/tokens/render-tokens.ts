// Render + tokenise + block hashes of one prompt, as one pure job: the inline path of the pipeline
// and a pool thread (gateway/workers-pool/) run this same code, so the ids, cuts and hashes a
// thread returns are those the event loop would have computed (tested). What crosses the thread
// boundary is plain data: the previous call's ids travel as a Uint32Array (cloned: one copy, with
// the room after them when they grew in place on the event loop: tokens/ids-arena.ts), the
// new ids come back as one (transferred: no copy) and are kept as they arrive; the block hashes
// come back as one string of fixed-width hex (no array of 10k strings to clone).
// Cost: what renderPrompt and tokenizeBySegments cost (O(new characters) with reuse, O(prompt)
// without); the offload wrapper adds one O(prompt tokens) copy (the previous ids into the job).
import { DEFAULT_HASH_SEED } from '../../kvplanner/block-hash.ts';
import { messageChars } from '../perf/time-slices.ts';
import type { ChatMessage, ToolDef } from '../types.ts';
import type { TokenizerHandle } from './handle.ts';
import { renderPrompt, type RenderMemo, type RenderResult } from './incremental-render.ts';
import { extendBlockHashes } from './prefix-blocks.ts';
import { hasPrefix } from './text-prefix.ts';
import { tokenizeBySegments, type SegmentTokens, type TokenCuts } from './segment-tokens.ts';

/** Characters of new prompt text from which a pool (when configured) renders and tokenises a call. */
export const DEFAULT_OFFLOAD_MIN_CHARS = 16_384;
/** Hex characters of one block hash (kvplanner/block-hash.ts). */
const HASH_HEX = 16;

export interface RenderTokensInput {
  messages: ChatMessage[];
  hashes: string[];
  rootEnd: number;
  stableEnd: number;
  /** toolsJson: JSON.stringify(tools), when known (tokens/tools-key.ts). */
  render: { tools?: ToolDef[]; extra?: Record<string, unknown>; contextKey: string; toolsJson?: string };
  /** The session's previous call in this process: its render memo, ids and cut points. */
  prev?: { memo?: RenderMemo; ids: Uint32Array; cuts?: TokenCuts };
}

export type RenderTokensOutput =
  | { ok: true; rendered: RenderResult; toks: SegmentTokens }
  | { ok: false; error: string };

/** The pipeline's render → reuse decision → tokenise sequence. `growIds`: the ids may extend the
 *  previous call's buffer in place (ids-arena.ts); false where the result's buffer is transferred. */
export function renderAndTokenise(
  tok: TokenizerHandle,
  input: RenderTokensInput,
  onRendered?: () => void,
  growIds = true,
): RenderTokensOutput {
  const { prev } = input;
  let rendered: RenderResult;
  try {
    rendered = renderPrompt(
      tok,
      input.messages,
      input.hashes,
      input.rootEnd,
      input.stableEnd,
      input.render,
      prev?.memo,
    );
  } catch (err) {
    return { ok: false, error: (err as Error).message };
  }
  onRendered?.();
  const stableChars = rendered.memo.textNoGen.length;
  // Characters this prompt shares with the previous one: its stable text, when both begin with it.
  const prevStable = prev?.cuts && prev.memo ? prev.memo.textNoGen : undefined;
  const shared =
    prevStable !== undefined && (rendered.mode !== 'full' || hasPrefix(rendered.text, prevStable))
      ? prevStable.length
      : 0;
  const reuse =
    shared > 0 && prev?.cuts
      ? { ids: prev.ids, cuts: prev.cuts, sharedChars: shared, sliceFrom: rendered.sliceFrom, grow: growIds }
      : undefined;
  const toks = tokenizeBySegments(tok, rendered.text, rendered.stablePrefix ? stableChars : 0, reuse);
  return { ok: true, rendered, toks };
}

/**
 * Characters of text this call must render and tokenise afresh (a cost estimate, O(messages)):
 * those of the messages from the first one that differs from the previous call's (by message
 * hash), or of all of them when there is no previous call or the tools/template variables changed.
 * An edit near the top of a long history therefore counts as the whole history after it.
 */
export function newChars(input: Pick<RenderTokensInput, 'messages' | 'hashes' | 'render' | 'prev'>): number {
  const { messages, hashes } = input;
  const memo = input.prev?.memo;
  let from = 0;
  if (memo && memo.contextKey === input.render.contextKey) {
    const n = Math.min(memo.hashes.length, hashes.length);
    while (from < n && memo.hashes[from] === hashes[from]) from++;
  }
  let chars = 0;
  for (let i = from; i < messages.length; i++) chars += messageChars(messages[i]);
  // Tool schemas render into the root: re-rendered with it.
  const tools = input.render.tools;
  if (from === 0 && tools) for (const t of tools) chars += JSON.stringify(t).length;
  return chars;
}

/** A render + tokenise job for a pool thread: plain, structured-cloneable data. */
export interface OffloadJob {
  tokenizer: string;
  chatTemplateFile?: string;
  input: RenderTokensInput;
  blockSize: number;
  /** Root of the block-hash chain (hashSeed of the tenant's cache salt). */
  seed: string;
}

/** What a pool thread sends back (plain data; `ids` is transferred). */
export type OffloadReply =
  | {
      ok: true;
      text: string;
      memo: RenderMemo;
      mode: RenderResult['mode'];
      stablePrefix: boolean;
      ids: Uint32Array;
      toks: Omit<SegmentTokens, 'ids'>;
      /** Block hashes, concatenated (HASH_HEX characters each). */
      hashes: string;
    }
  | { ok: false; error: string };

/** Thread side: runs the job with a loaded tokenizer. */
export function runOffloadJob(tok: TokenizerHandle, job: OffloadJob): OffloadReply {
  // (its ids' buffer is transferred whole: an own buffer of their exact length)
  const out = renderAndTokenise(tok, job.input, undefined, false);
  if (!out.ok) return out;
  const { rendered, toks } = out;
  const hashes = extendBlockHashes(toks.ids, job.blockSize, undefined, 0, job.seed ?? DEFAULT_HASH_SEED).join('');
  const { ids, ...rest } = toks;
  return {
    ok: true,
    text: rendered.text,
    memo: rendered.memo,
    mode: rendered.mode,
    stablePrefix: rendered.stablePrefix,
    ids,
    toks: rest,
    hashes,
  };
}

/** Main side: the job for a call (the pool clones it, the previous ids with it: one copy). */
export function offloadJob(
  base: Pick<OffloadJob, 'tokenizer' | 'chatTemplateFile' | 'blockSize' | 'seed'>,
  input: RenderTokensInput,
): OffloadJob {
  return { ...base, input };
}

/** Main side: the reply as the inline path's results, plus the block hashes. */
export function fromOffloadReply(r: OffloadReply): RenderTokensOutput & { hashes?: string[] } {
  if (!r.ok) return r;
  const text = r.text;
  const rendered: RenderResult = {
    text,
    textNoGen: r.memo.textNoGen,
    memo: r.memo,
    mode: r.mode,
    stablePrefix: r.stablePrefix,
    sliceFrom: (from) => text.slice(from),
  };
  const ids = r.ids;
  const hashes = new Array<string>(r.hashes.length / HASH_HEX);
  for (let i = 0; i < hashes.length; i++) hashes[i] = r.hashes.slice(i * HASH_HEX, (i + 1) * HASH_HEX);
  return { ok: true, rendered, toks: { ...r.toks, ids }, hashes };
}

/** The pipeline's seam to a render pool: run a job off the event loop (rejects when the pool is full). */
export interface RenderOffload {
  /** A call whose new characters (newChars) reach this many goes to the pool; smaller ones run inline. */
  readonly minChars: number;
  run(job: OffloadJob, meta: { tenant: string; affinity: string }): Promise<OffloadReply>;
}
