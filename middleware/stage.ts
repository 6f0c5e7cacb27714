// Stage API of the context pipeline. A stage is a named function
//   (view: RequestView, ctx: StageContext) => { view: RequestView; receipts: Receipt[] }   (sync or async)
// that rewrites the request body and says what it did. Stages run in the one order listed in
// chain.ts (`contextStages`), each gated by the model's `transforms` map
// (`transforms[stage.name] === false` skips it; absent means on). `layout: passthrough` skips all.
//
// Rules for stage authors:
// - Copy-on-write: never mutate `view.body` or its messages in place. Return a new body/messages
//   array, reusing untouched message objects (unchanged objects keep their cached hashes, and the
//   caller's request object stays intact for logging and retries).
// - Anything removed from or added to the prompt gets a Receipt (stage, action, target, reason,
//   tokens_before/after when known). Nothing the agent sent may disappear silently.
// - Notes for the model (tombstones, relocated volatile lines) go into `view.notes`: the pipeline
//   places all of them as ONE leaf note after the history, where it costs no cached prefix.
// - Per-session memory lives in `view.session`, in the stage's own versioned part, read and
//   written only through a typed slot (session/stage-state.ts); it is persisted by the pipeline
//   after the call through the SessionStore (JSON only). A stored part is shared between calls
//   and frozen (session/shared-parts.ts): never change what readSlot returned, write a new part
//   (copy on write; unchanged sub-objects may be shared). A write into a stored part throws.
// - Receipts that count as a metric are declared in `metrics`; the gateway counts from these
//   declarations only.
// - Work the upstream body and the routing decision do not read (slot bookkeeping, records kept for
//   the next call) goes to after the send: `afterSend(ctx, job)` (after-send.ts).
// - Deterministic and idempotent: the same input and state must give byte-identical output.
import type { AfterSend } from './after-send.ts';
import type { CountTexts } from './perf/count-offload.ts';
import type { SessionState } from './session/store.ts';
import type { TokenizerHandle } from './tokens/handle.ts';
import type { ChatRequest, Receipt } from './types.ts';

export type Zone = 'root' | 'trunk' | 'leaf';

/** Message index ranges of the three layout zones (docs/architecture.md, "Layout zones"), end-exclusive. */
export interface Segments {
  /** Leading system/developer messages (tools belong to the root too). */
  root: { start: number; end: number };
  /** Task and older history. */
  trunk: { start: number; end: number };
  /** The newest call's messages: everything after the last assistant message. */
  leaf: { start: number; end: number };
  /** Content hash per message (sha1 base64 of its JSON), index-aligned with body.messages. */
  messageHashes: string[];
}

export interface RequestView {
  /** The body being rewritten (copy-on-write, see above). */
  body: ChatRequest;
  /** Zone boundaries of `body.messages`; the pipeline recomputes them after every stage that changed messages. */
  segments: Segments;
  /** Session state loaded from the SessionStore (created fresh for a new session). */
  session: SessionState;
  /** Gateway notes to place in the single leaf note after the history (plain text lines). */
  notes: string[];
}

export interface StageContext {
  tenant: string;
  requestId: string;
  model: string;
  sessionId: string;
  /** True when the store had no state for this session. */
  newSession: boolean;
  headers: Record<string, string | undefined>;
  tokenizer: TokenizerHandle;
  blockSize: number;
  /** The model's `transforms` map: a stage may read its own setting (e.g. `volatile: 'eager'`). */
  transforms?: Readonly<Record<string, boolean | 'eager'>>;
  /** Wall clock in ms (default Date.now); benchmarks pass a virtual one. */
  now?: () => number;
  /** Hands work to after the upstream send (after-send.ts: order, lock, what a job may touch).
   *  Absent where the caller drives the chain itself: call `afterSend(ctx, job)`, which then runs it at once. */
  afterSend?: AfterSend;
  /** Counts big texts on a render pool thread with this call's tokenizer (perf/count-offload.ts);
   * absent without a pool. Rejects with the pool's GatewayError (429/503 full, 422 failed). */
  countTexts?: CountTexts;
}

export interface StageResult {
  view: RequestView;
  receipts: Receipt[];
}

export type StageFn = (view: RequestView, ctx: StageContext) => StageResult | Promise<StageResult>;

/** Counters a receipt can count toward (gateway/metrics.ts owns the series; `compactions` is
 * labelled by the receipt's action, bounded by the declared actions). */
export type ReceiptCounter = 'tombstones' | 'compactions';

/** Which of a stage's receipts count as which metric. */
export interface ReceiptMetric {
  /** Receipt actions of this stage that count. */
  actions: readonly string[];
  counter: ReceiptCounter;
  /** The receipt's tokens_before − tokens_after also count as tokens saved. */
  tokensSaved?: boolean;
}

export interface Stage {
  /** Key in the model's `transforms` switch map, in receipts and in the session state. */
  name: string;
  run: StageFn;
  /** The settings the stage was created with (JSON), for comparing what runs where. */
  settings?: Readonly<Record<string, unknown>>;
  metrics?: readonly ReceiptMetric[];
}

/** Helper for stages: a result that changed nothing. */
export function unchanged(view: RequestView): StageResult {
  return { view, receipts: [] };
}
