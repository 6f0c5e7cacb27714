// The context pipeline (issue 5): session identification, layout stages, leaf note, engine-exact
// rendering and tokens, block hashes, cache-break diagnostics and receipts.
//
// Adding a stage: write a `Stage` (see stage.ts for the contract) and add it to the one list in
// chain.ts (`contextStages`), which this pipeline, `bench replay` and `bench strategies` all run.
// Each stage is switched per model by `transforms: { <stage name>: false }`;
// `layout: passthrough` runs none of them and returns the body untouched (the session id, tokens,
// block hashes and diagnostics are still computed, for routing and metrics).
//
// Per call: one store get + put (see layout/session-claim.ts for the derived-id cases), stages
// O(request) with resent messages interned to the previous call's objects (layout/resent.ts), so
// escaping and the stages' per-message hashes touch only messages not seen before; rendering incremental (tokens/incremental-render.ts), block hashes only for the new
// tail. The previous call of a session is kept in this
// process (LRU `local`): its message objects let message hashes carry over to structurally equal
// resent messages (no JSON + sha1 of the history each call), and its token ids and cut points let
// only the new tail of the prompt be tokenised; the common-prefix scans start where reuse ended.
import { DEFAULT_BLOCK_SIZE, hashSeed } from '../kvplanner/block-hash.ts';
import { freezeEdited, indicesFrom } from './deep-freeze.ts';
import { TenantLru } from './tenant-lru.ts';
import { AfterSendQueue } from './after-send.ts';
import type { ArtifactStore } from './artifacts/store.ts';
import { chainInput, contextStages, describeChain, runChain, type ChainRunOptions, type ChainSpec } from './chain.ts';
import { breakRecord, pushBreak } from './diagnostics/break-ring.ts';
import { diagnose, messageAtChar, type CallFingerprint } from './diagnostics/cache-break.ts';
import { decodedOffset, keepMarks, type DecodedMarks, type DecodedOffsetInput } from './diagnostics/decoded-offset.ts';
import { originalCachedTokens } from './diagnostics/original-layout.ts';
import { segment, type HashSource } from './layout/segmentation.ts';
import { LEAD_SLOT, resolveSession, TURN_SLOT } from './layout/session-claim.ts';
import { internResent, internTools, resendHint } from './layout/resent.ts';
import { identifySession } from './layout/session-id.ts';
import { lap, tick } from './perf/stage-timers.ts';
import { DEFAULT_SLICE_MIN_CHARS, messageChars, promptChars, yieldToLoop } from './perf/time-slices.ts';
import type { EscapeMemo } from './redaction/framing.ts';
import { freshSessionState } from './session/fresh-state.ts';
import { MemorySessionStore } from './session/memory-store.ts';
import { sessionLockKey, sessionLockOf } from './session/session-lock.ts';
import { defineSlot, readSlot, writeSlot } from './session/stage-state.ts';
import type { SessionStore } from './session/store.ts';
import type { RequestView, Segments, StageContext } from './stage.ts';
import type { RenderMemo } from './tokens/incremental-render.ts';
import { extendBlockHashes, extendBlockKeys } from './tokens/prefix-blocks.ts';
import { pinnedIds } from './tokens/ids-arena.ts';
import { loadTokenizer } from './tokens/registry.ts';
import {
  fromOffloadReply,
  newChars,
  offloadJob,
  renderAndTokenise,
  type RenderOffload,
  type RenderTokensInput,
} from './tokens/render-tokens.ts';
import { type CountOffload, poolCounter } from './perf/count-offload.ts';
import type { TokenCuts } from './tokens/segment-tokens.ts';
import type { TokenizerHandle } from './tokens/handle.ts';
import { shortSha1, toolsKey } from './tokens/tools-key.ts';
import type {
  ChainDescription,
  ChatMessage,
  ChatRequest,
  ContextPipeline,
  PipelineContext,
  PipelineResult,
  Receipt,
} from './types.ts';

/** Sessions whose last call a request can be matched to by its resend hint (layout/resent.ts). */
export const DEFAULT_MAX_HINTS = 10_000;

/**
 * Token ids of previous calls kept in this process for exact break positions and reuse (LRU
 * weight: ids plus half the stable text's characters, so ~4-8 bytes a unit with the messages
 * kept beside them): ~64-128 MB, a last call for ~1,000 sessions of 16k tokens. At 64M the cache
 * only filled after ~256-512 MB, so a gateway's RSS grew for hours of distinct sessions (bench chaos:
 * +23 % in 60 s with the session store already full).
 */
export const DEFAULT_LOCAL_TOKENS = 16_000_000;
/** Sessions whose last call is kept in this process (the gateway passes its session quota). */
export const DEFAULT_MAX_LOCAL_CALLS = 10_000;

/** The pipeline's own part of the session state: the previous call's fingerprint (cache-break diagnostics). */
export const FINGERPRINT_SLOT = defineSlot<CallFingerprint>('fingerprint', 1);

/** The chain (ChainSpec: layout, transforms, budget, tool-output cap) and what the pipeline needs. */
export interface PipelineOptions extends Partial<ChainSpec> {
  model: string;
  tokenizer: string;
  chatTemplateFile?: string;
  blockSize?: number;
  store?: SessionStore;
  /** Most sessions whose last call `local` keeps (besides DEFAULT_LOCAL_TOKENS). */
  maxLocalCalls?: number;
  artifacts?: ArtifactStore;
  /** A render pool: calls with at least `minChars` new characters render and tokenise there; with
   * `count`, the stages count big texts there too (perf/count-offload.ts). */
  offload?: RenderOffload & Partial<CountOffload>;
  /** Characters of message text from which a request yields the event loop between sections. */
  sliceMinChars?: number;
  /** false: no message carries over from an earlier call (resent history is escaped and hashed
   * afresh); the output must be byte-identical either way (tests compare). Default true. */
  reuse?: boolean;
}

interface LocalCall {
  /** The session state's call count after this call: a local call is only continued from the
   * state it belongs to (another replica may have served calls since). */
  calls: number;
  /** Prompt token ids, packed (off the V8 heap: kept until the session's next call, see segment-tokens.ts). */
  ids: Uint32Array;
  hashes: readonly string[];
  /** hashes' keys (kvplanner/hash-keys.ts): the next call copies those of the blocks it shares */
  keys: Int32Array;
  blockSize: number;
  memo?: RenderMemo;
  /** Cut points of `ids` (see segment-tokens.ts), valid when the prompt began with memo.textNoGen. */
  cuts?: TokenCuts;
  /** The request's messages as received (resent ones interned, layout/resent.ts), as escaped
   * and as sent on, with their hashes (carried to the next call). */
  received: readonly ChatMessage[];
  /** promptChars(received): the next call that resends all of `received` counts only its new messages. */
  chars: number;
  /** The request's tools as received (interned like the messages). */
  receivedTools: ChatRequest['tools'];
  input: HashSource;
  output: HashSource;
  /** The fingerprint's system hash and the root message hashes it hashed (reused while equal). */
  system: { key: string; hash: string };
  /** Decoded prompt lengths at a few token positions (diagnostics/decoded-offset.ts). */
  marks?: DecodedMarks;
}

/** LRU weight of a kept call: the ids it pins (their buffer's room included, tokens/ids-arena.ts)
 *  plus ~a quarter of the characters of its text and messages. */
const localSize = (v: LocalCall): number => Math.max(1, pinnedIds(v.ids) + ((v.memo?.textNoGen.length ?? 0) >> 1));

const sha1 = shortSha1;

/** A pipeline that says which chain it runs (tests compare entry points with it). */
export interface ChainPipeline extends ContextPipeline {
  readonly chain: ChainDescription;
}

export function createPipeline(opts: PipelineOptions): ChainPipeline {
  const spec: ChainSpec = {
    layout: opts.layout ?? 'ctxgate',
    transforms: opts.transforms ?? {},
    budgetTokens: opts.budgetTokens,
    maxToolOutputBytes: opts.maxToolOutputBytes,
    ledgerWriteVersion: opts.ledgerWriteVersion,
  };
  const { layout, transforms } = spec;
  const blockSize = opts.blockSize ?? DEFAULT_BLOCK_SIZE;
  const sliceMinChars = opts.sliceMinChars ?? DEFAULT_SLICE_MIN_CHARS;
  const store = opts.store ?? new MemorySessionStore();
  const stages = contextStages(spec, { artifacts: opts.artifacts });
  const stageLabels = stages.map((s) => `stage:${s.name}`);
  const tokenizer = loadTokenizer(opts.tokenizer, { chatTemplateFile: opts.chatTemplateFile });
  // Swallow here so an unused pipeline with a bad spec is no unhandled rejection; process() rethrows.
  tokenizer.catch(() => undefined);
  // Big texts a stage counts go to the pool with this call's tenant and lane (perf/count-offload.ts).
  const countPool = opts.offload?.count ? (opts.offload as RenderOffload & CountOffload) : undefined;
  const countTextsOf =
    countPool &&
    poolCounter(countPool, { tokenizer: opts.tokenizer, chatTemplateFile: opts.chatTemplateFile }, countPool.minChars);
  const poolBase = (seed: string) => ({
    tokenizer: opts.tokenizer,
    chatTemplateFile: opts.chatTemplateFile,
    blockSize,
    seed,
  });
  // Per tenant: LRU above each active tenant's reserve, so a flood evicts its own kept calls, not a
  // quieter tenant's, and idle tenants' go first (tenant-lru.ts).
  const local = new TenantLru<LocalCall>({
    max: opts.maxLocalCalls ?? DEFAULT_MAX_LOCAL_CALLS,
    maxSize: DEFAULT_LOCAL_TOKENS,
    sizeOf: localSize,
  });
  const reuse = opts.reuse !== false;
  // resendHint → the local key of the call a request most likely continues (layout/resent.ts);
  // per tenant, as `local`.
  const hints = new TenantLru<string>({ max: DEFAULT_MAX_HINTS, maxSize: DEFAULT_MAX_HINTS, sizeOf: () => 1 });
  const escaped: EscapeMemo = new WeakMap();
  const lock = sessionLockOf(store);

  // The store get → stages → put section runs under the session's lock (session/session-lock.ts):
  // two concurrent calls of one session would otherwise both start from the same state and the
  // later put would drop the earlier call's learning. process() takes the lock once it knows the
  // session; this wrapper releases it however process() ends. The upstream call is not inside.
  // With `ctx.deferStore` the stages' after-send jobs (after-send.ts) and the state write (the call
  // count, fingerprint, break ring and the store put, none of which the upstream body or the worker
  // choice reads) run once the caller has sent the body upstream (`ctx.sent`, else the next turn of
  // the event loop); the lock is held until the put settled, so the session's next call still reads
  // this call's state, and `result.stored` says when. Without it they run before process() returns.
  async function processLocked(received: ChatRequest, ctx: PipelineContext): Promise<PipelineResult> {
    const held: Held = {};
    let result: PipelineResult;
    try {
      result = await process(received, ctx, held);
    } catch (err) {
      held.release?.();
      throw err;
    }
    const commit = held.commit;
    if (commit === undefined) {
      held.release?.();
      return result;
    }
    if (!ctx.deferStore) {
      try {
        await commit();
      } finally {
        held.release?.();
      }
      return result;
    }
    const schedule = ctx.sent ?? setImmediate;
    result.stored = new Promise<void>((resolve) => {
      schedule(commitThenRelease.bind(undefined, commit, held, resolve));
    });
    return result;
  }

  async function process(received: ChatRequest, ctx: PipelineContext, held: Held): Promise<PipelineResult> {
    const tok = await tokenizer;
    let t = tick();
    const hint = reuse ? resendHint(ctx.tenant, received, ctx.headers) : undefined;
    const hinted = hint === undefined ? undefined : hints.get(ctx.tenant, hint);
    const before = hinted === undefined ? undefined : local.get(ctx.tenant, hinted);
    const resent = internResent(received.messages, before?.received);
    // A big request yields the event loop between its O(prompt) sections (perf/time-slices.ts).
    const chars = Array.isArray(resent) ? resentChars(resent, before) : 0;
    const big = chars >= sliceMinChars;
    const resentTools = internTools(received.tools, before?.receivedTools);
    if (ctx.onInterned !== undefined) {
      if (resent !== received.messages) ctx.onInterned('messages', received.messages, resent);
      if (resentTools !== received.tools && Array.isArray(received.tools) && Array.isArray(resentTools))
        ctx.onInterned('tools', received.tools, resentTools);
    }
    let own: ChatRequest = resent === received.messages ? received : { ...received, messages: resent };
    if (resentTools !== received.tools) own = { ...own, tools: resentTools };
    const body = chainInput(spec, own, reuse ? escaped : undefined);
    t = lap('escape', t);
    if (big) await yieldToLoop();
    const ident = identifySession(body, ctx);
    // A derived session's base, its seed and its forks are one lock (session-claim.ts writes them together).
    held.release = await lock.acquire(sessionLockKey(ctx.tenant, ident.parent ?? ident.id), ctx.signal);
    const resolved = await resolveSession(store, ctx.tenant, ident, (id) =>
      local.has(ctx.tenant, localKeyOf(ctx.tenant, id)),
    );
    const sessionId = resolved.id;
    const key = localKeyOf(ctx.tenant, resolved.stateId);
    const loaded = resolved.loaded;
    const lastLocal = local.get(ctx.tenant, localKeyOf(ctx.tenant, resolved.localFrom));
    const prevLocal = lastLocal && (!loaded || lastLocal.calls === loaded.calls) ? lastLocal : undefined;
    if (resolved.seedId && prevLocal) local.set(ctx.tenant, localKeyOf(ctx.tenant, resolved.seedId), prevLocal);
    const state = loaded ?? freshSessionState(ctx.tenant, resolved.stateId, opts.model, body);
    if (ident.lead !== undefined) writeSlot(state, LEAD_SLOT, ident.lead);
    if (resolved.claim !== undefined) writeSlot(state, TURN_SLOT, resolved.claim);
    let receipts: Receipt[] = [];
    // The stages' work for after the send (after-send.ts): run by the commit, before the put.
    const deferred = new AfterSendQueue();
    t = lap('session', t);
    if (big) await yieldToLoop();
    const inSegs = segment(body.messages, prevLocal ? [prevLocal.input] : []);
    t = lap('message_hashes', t);
    if (big) await yieldToLoop();
    const input: HashSource = { messages: body.messages, hashes: inSegs.messageHashes };
    const carried = carrierOf(prevLocal);
    const view: RequestView = { body, segments: inSegs, session: state, notes: [] };
    const sctx: StageContext = {
      tenant: ctx.tenant,
      requestId: ctx.requestId,
      model: opts.model,
      sessionId,
      newSession: !loaded,
      headers: ctx.headers,
      tokenizer: tok,
      blockSize,
      transforms,
      afterSend: deferred.add.bind(deferred),
      countTexts: countTextsOf?.(ctx.tenant, key, (t) => tok.encodeCached(t).length),
    };
    let out: ChatRequest = body;
    // Nothing rewritten: the caller's own object goes on (the gateway then forwards its bytes).
    let stableEnd = body.messages.length;
    let staged = view;
    if (layout !== 'passthrough') {
      const run: ChainRunOptions = { carried, between: big ? yieldToLoop : undefined };
      // Assigned, not written in the literal: an arrow there gets a name (see carrierOf).
      run.lap = (i) => void (t = lap(stageLabels[i], t));
      const r = await runChain(spec, stages, view, sctx, run);
      ({ view: staged, body: out, stableEnd, receipts } = r);
    }
    const segs = out.messages === staged.body.messages ? staged.segments : segment(out.messages, carried(staged));
    t = lap('leaf_note', t);
    const tools = Array.isArray(out.tools) && out.tools.length > 0 ? out.tools : undefined;
    const extra = (out.chat_template_kwargs ?? undefined) as Record<string, unknown> | undefined;
    const tk = toolsKey(tools, extra);
    const rtIn: RenderTokensInput = {
      messages: out.messages,
      hashes: segs.messageHashes,
      rootEnd: segs.root.end,
      stableEnd,
      render: { tools, extra, contextKey: tk.contextKey, toolsJson: tk.json },
      prev: prevLocal ? { memo: prevLocal.memo, ids: prevLocal.ids, cuts: prevLocal.cuts } : undefined,
    };
    const seed = hashSeed(ctx.cacheSalt);
    // A big call renders and tokenises on a pool thread, so the event loop keeps serving others.
    const pool = opts.offload;
    const offloaded =
      pool && newChars(rtIn) >= pool.minChars
        ? fromOffloadReply(await pool.run(offloadJob(poolBase(seed), rtIn), { tenant: ctx.tenant, affinity: key }))
        : undefined;
    const rt =
      offloaded ??
      renderAndTokenise(tok, rtIn, () => {
        t = lap('render', t);
      });
    if (!rt.ok) {
      // An unrenderable request is the upstream's to reject; the pipeline never blocks it.
      receipts.push({ stage: 'render', action: 'skip', reason: `chat template failed: ${rt.error}` });
      held.commit = async () => {
        await deferred.run();
        state.calls++;
        state.updatedAt = Date.now();
        await store.put(state);
      };
      return { body: out === own ? received : out, sessionId, affinityKey: ident.parent ?? sessionId, receipts };
    }
    const { rendered, toks } = rt;
    t = lap(offloaded ? 'pool_render_tokens' : 'tokens', t);
    if (big) await yieldToLoop();
    if (toks.mergedSeams > 0)
      receipts.push({
        stage: 'tokens',
        action: 'seam_fallback',
        target: `${toks.mergedSeams} seam(s)`,
        reason: 'segment ids merged across a seam; re-encoded as whole text there',
      });
    const ids = toks.ids;
    // Block hashes are a pure function of the ids: the previous call's are reused up to the exact
    // common token prefix (scanned from where token reuse ended), whatever the diagnostics say.
    const sameIds = prevLocal ? lcpUpTo(prevLocal.ids, ids, ids.length, toks.reusedTokens) : 0;
    if (big) await yieldToLoop();
    const hashes = offloaded?.hashes ?? extendBlockHashes(ids, blockSize, prevLocal, sameIds, seed);
    const keys = extendBlockKeys(hashes, blockSize, prevLocal, sameIds);
    t = lap('block_hashes', t);
    const messages = out.messages.length;
    const result: PipelineResult = {
      body: out === own ? received : out,
      sessionId,
      affinityKey: ident.parent ?? sessionId,
      receipts,
      prefix: undefined,
      promptTokenIds: ids,
      blockHashes: hashes,
      blockKeys: keys,
    };
    // What neither the upstream body nor the routing decision reads (the cache-break diagnostics,
    // the call kept for the next one) runs after the send (after-send.ts), first in the commit:
    // `result.prefix` is set before the gateway reads it (response headers, records).
    const after: AfterCall = {
      tok,
      prevLocal,
      prevPrint: loaded ? readSlot(state, FINGERPRINT_SLOT) : undefined,
      segs,
      tk,
      stableEnd,
      toks,
      ids,
      hashes,
      keys,
      blockSize,
      rendered,
      out,
      inSegs,
      input,
      resent,
      chars,
      resentTools,
      sameIds,
      calls: state.calls + 1,
      result,
    };
    held.commit = async () => {
      const t1 = tick();
      const cur = afterCall(after, local, ctx.tenant, key);
      if (hint !== undefined) hints.set(ctx.tenant, hint, key);
      const t2 = lap('diagnose', t1);
      await deferred.run();
      const t0 = lap('after_send', t2);
      state.calls++;
      state.updatedAt = Date.now();
      sizeStableHashes(after.prevPrint, cur);
      writeSlot(state, FINGERPRINT_SLOT, cur);
      pushBreak(state, breakRecord(result.prefix!, state.calls, state.updatedAt, ctx.requestId, messages));
      await store.put(state);
      lap('store_put', t0);
    };
    return result;
  }

  return { process: processLocked, chain: describeChain(spec, stages) };
}

/** What the pipeline does for a call after its send (see process: the diagnostics, the kept call). */
interface AfterCall {
  tok: TokenizerHandle;
  prevLocal: LocalCall | undefined;
  prevPrint: CallFingerprint | undefined;
  segs: Segments;
  tk: ReturnType<typeof toolsKey>;
  stableEnd: number;
  toks: { reusedTokens: number; tokensBeforeMark: number; cuts: TokenCuts };
  ids: Uint32Array;
  hashes: readonly string[];
  keys: Int32Array;
  blockSize: number;
  rendered: { text: string; memo?: RenderMemo; stablePrefix: boolean };
  out: ChatRequest;
  inSegs: Segments;
  input: HashSource;
  resent: readonly ChatMessage[];
  /** promptChars(resent). */
  chars: number;
  resentTools: ChatRequest['tools'];
  /** Exact common token prefix with the previous call (0 without one). */
  sameIds: number;
  /** The session state's call count after this call. */
  calls: number;
  result: PipelineResult;
}

/** Diagnoses the call against the previous one (result.prefix), keeps it in `local` for the
 * next call, and returns its fingerprint. */
function afterCall(a: AfterCall, local: TenantLru<LocalCall>, tenant: string, key: string): CallFingerprint {
  const { prevLocal, segs, toks, ids, blockSize, rendered, out } = a;
  const systemKey = segs.messageHashes.slice(segs.root.start, segs.root.end).join(',');
  const system =
    prevLocal !== undefined && prevLocal.system.key === systemKey
      ? prevLocal.system
      : { key: systemKey, hash: sha1(systemKey) };
  const cur: CallFingerprint = {
    systemHash: system.hash,
    toolsHash: a.tk.toolsHash,
    stableHashes: segs.messageHashes.slice(0, a.stableEnd),
    promptTokens: toks.tokensBeforeMark,
  };
  const located: Located = {
    input: {
      tok: a.tok,
      ids,
      prev: prevLocal?.marks ? { ids: prevLocal.ids, marks: prevLocal.marks } : undefined,
      floor: toks.reusedTokens,
    },
  };
  const prefix = diagnose({
    prev: a.prevPrint,
    prevIds: prevLocal?.ids,
    commonFloor: toks.reusedTokens,
    cur,
    ids,
    blockSize,
    messageAtToken: messageLocator(located, rendered.text, out.messages),
  });
  prefix.original_cached_tokens = originalCachedTokens({
    prevHashes: prevLocal?.input.hashes,
    curHashes: a.inSegs.messageHashes,
    predicted: prefix.predicted_cached_tokens,
    text: rendered.text,
    messages: out.messages,
    cuts: toks.cuts,
    blockSize,
  });
  a.result.prefix = prefix;
  const common = prevLocal
    ? Math.min(prevLocal.ids.length, prefix.break_cause === 'none' ? ids.length : (prefix.break_token_index ?? 0))
    : 0;
  // lcpUpTo(prev, ids, common, reused) without a second scan: the exact common prefix capped at `common`.
  const commonExact = Math.min(a.sameIds, common);
  local.set(tenant, key, {
    calls: a.calls,
    ids,
    hashes: a.hashes,
    keys: a.keys,
    blockSize,
    memo: rendered.memo,
    cuts: rendered.stablePrefix ? toks.cuts : undefined,
    received: a.resent,
    chars: a.chars,
    receivedTools: a.resentTools,
    input: a.input,
    output: { messages: out.messages, hashes: segs.messageHashes },
    system,
    marks: located.done ? located.marks : keepMarks(prevLocal?.marks, commonExact),
  });
  return cur;
}

/** The deferred commit (processLocked): the state write, then the lock's release, then `stored`. */
function commitThenRelease(commit: () => Promise<void>, held: Held, resolve: () => void): void {
  commit()
    .catch((err: unknown) => {
      // The answer is on its way: the state of this one call is what is lost, said loudly.
      globalThis.process.emitWarning(`ctxgate: session state not stored: ${(err as Error)?.message ?? err}`);
    })
    .finally(() => {
      held.release?.();
      resolve();
    });
}

interface Held {
  release?: () => void;
  /** The call's state write and store put, run under the lock (see processLocked). */
  commit?: () => Promise<void>;
}

// Per-call closures come from these functions as anonymous arrows: tsx (esbuild keepNames) names
// every closure written as `const f = () =>` or `{ f: () => }`, a defineProperty of ~1 µs per call each.

/** Freezes the fingerprint's stable hashes sized from the previous call's (deep-freeze.ts
 * freezeEdited), equal up to where they first differ (resent messages carry their hash strings
 * over, so the scan is a pointer compare a message): the put then sizes the new tail instead of
 * walking every message's hash again. */
function sizeStableHashes(prev: CallFingerprint | undefined, cur: CallFingerprint): void {
  const a = prev?.stableHashes;
  const b = cur.stableHashes;
  if (a === undefined) return;
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  freezeEdited(a, b, indicesFrom(a, b, i));
}

function localKeyOf(tenant: string, id: string): string {
  return `${tenant}\u0000${id}`;
}

/** Message hashes a re-segmentation takes over: the view's, then the previous call's output's. */
function carrierOf(prevLocal: LocalCall | undefined): (v: RequestView) => HashSource[] {
  return (v) => [
    { messages: v.body.messages, hashes: v.segments.messageHashes },
    ...(prevLocal ? [prevLocal.output] : []),
  ];
}

/** A break's token-to-character lookup and the decoded-length marks it leaves for the next call. */
interface Located {
  input: DecodedOffsetInput;
  done?: boolean;
  marks?: DecodedMarks;
}

/** The message holding prompt token `t` (cache-break diagnostics; only called on a break). */
function messageLocator(located: Located, text: string, messages: ChatMessage[]): (t: number) => number | undefined {
  return (t) => {
    const at = decodedOffset(located.input, t);
    located.done = true;
    located.marks = at.marks;
    return messageAtChar(text, messages, at.chars);
  };
}

/**
 * promptChars(messages), counting only the messages after `before`'s when all of its received
 * messages are the first of `messages`, object for object (internResent puts a resent message's
 * earlier object in its place): O(new messages) plus a pointer compare a message, where a full
 * count reads every message's text fields each call. The same figure either way: an interned
 * message is JSON-equal to the one received, and no one changes a message in place.
 */
function resentChars(messages: readonly ChatMessage[], before: LocalCall | undefined): number {
  const prev = before?.received;
  if (prev === undefined || prev.length > messages.length) return promptChars(messages);
  const n = prev.length;
  let i = 0;
  while (i < n && messages[i] === prev[i]) i++;
  if (i < n) return promptChars(messages);
  let chars = before!.chars;
  for (; i < messages.length; i++) chars += messageChars(messages[i]);
  return chars;
}

/** Common prefix length of a and b, not scanning past `limit`; the first `from` are known equal. */
function lcpUpTo(a: ArrayLike<number>, b: ArrayLike<number>, limit: number, from = 0): number {
  const n = Math.min(a.length, b.length, limit);
  let i = Math.min(from, n);
  while (i < n && a[i] === b[i]) i++;
  return i;
}

export type { TokenizerHandle };
