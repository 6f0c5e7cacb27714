// The context chain: the ONE list of stages, in their one order, that `ctxgate serve` (through
// gateway/assemble.ts), `bench replay` (which starts the assembled gateway) and `bench
// strategies` (loadtest/strategies/ctxgate-strategy.ts) all run, so what is benchmarked is what
// is served. Order: canonical_tools → volatile (layout) → stabilise → ledger → compaction (only
// with a budget M*), then the leaf note that carries every stage's notes after the history.
// Each stage is switched per model by `transforms: { <name>: false }`; `layout: passthrough`
// runs none. Per call O(request) plus what the stages cost (see their files).
import type { ArtifactStore } from './artifacts/store.ts';
import { createCompactionStage } from './compaction/stage.ts';
import { canonicalToolsStage } from './layout/canonical-tools-stage.ts';
import { LEAF_NOTE_STAGE, placeLeafNote } from './layout/leaf-note.ts';
import { segment, type HashSource } from './layout/segmentation.ts';
import { volatileStage } from './layout/volatile-stage.ts';
import { DEFAULT_LEDGER_WRITE_VERSION, type LedgerWriteVersion } from './ledger/slot.ts';
import { createLedgerStage } from './ledger/stage.ts';
import { escapeRequest, type EscapeMemo } from './redaction/framing.ts';
import { DEFAULT_MAX_ORIGINAL_BYTES } from './stabilise/stabilise.ts';
import { createStabiliseStage } from './stabilise/stage.ts';
import type { ReceiptMetric, RequestView, Stage, StageContext } from './stage.ts';
import type { ChainDescription, ChatRequest, Receipt } from './types.ts';

/** What a model's config says about its chain (gateway/assemble.ts maps the config onto it). */
export interface ChainSpec {
  layout: 'ctxgate' | 'passthrough';
  /** Stage name → false (off), true (on, the default) or a mode (`volatile: 'eager'`). */
  transforms: Readonly<Record<string, boolean | 'eager'>>;
  /** M*, the working-set budget: compaction runs only with one. */
  budgetTokens?: number;
  /** limits.max_tool_output_bytes: no stored original (stabilise) is longer. */
  maxToolOutputBytes?: number;
  /** session_state.ledger_write_version: the shape the ledger's part is stored with (ledger/slot.ts). */
  ledgerWriteVersion?: LedgerWriteVersion;
}

/** The I/O the stages need, behind small interfaces. */
export interface ChainIO {
  artifacts?: ArtifactStore;
}

/** The stages a model runs, in order; transforms switch them off one by one. */
export function contextStages(spec: ChainSpec, io: ChainIO = {}): Stage[] {
  if (spec.layout === 'passthrough') return [];
  // Stabilise never keeps (nor truncates: a cut original could not be re-sent) one original
  // longer than the config's tool-output cap, so that cap is its cap too.
  const maxBytes = Math.min(DEFAULT_MAX_ORIGINAL_BYTES, spec.maxToolOutputBytes ?? Infinity);
  // Compaction reads and copies the stabiliser's state on the call: only without it may the new
  // messages' hashes wait for the send (stabilise/stage.ts).
  const compacts = !!spec.budgetTokens && spec.transforms.compaction !== false;
  const all: Stage[] = [
    canonicalToolsStage,
    volatileStage,
    createStabiliseStage({ maxBytes }, { oweHashes: !compacts }),
    createLedgerStage({ writeVersion: spec.ledgerWriteVersion ?? DEFAULT_LEDGER_WRITE_VERSION }),
  ];
  if (spec.budgetTokens) all.push(createCompactionStage({ budgetTokens: spec.budgetTokens, artifacts: io.artifacts }));
  return all.filter((s) => spec.transforms[s.name] !== false);
}

/** What runs, for comparing entry points: each stage with its settings, the leaf note, the modes. */
export function describeChain(spec: ChainSpec, stages: readonly Stage[]): ChainDescription {
  return {
    stages: stages.map((s) => ({ name: s.name, settings: s.settings ?? {} })),
    leafNote: spec.layout !== 'passthrough' && spec.transforms[LEAF_NOTE_STAGE] !== false,
    transforms: spec.transforms,
  };
}

/** The body the stages see: gateway notes are framed by a marker no text the agent sent may carry
 * (whatever stages run); passthrough adds no notes and forwards the body as received. */
export function chainInput(spec: Pick<ChainSpec, 'layout'>, received: ChatRequest, memo?: EscapeMemo): ChatRequest {
  return spec.layout === 'passthrough' ? received : escapeRequest(received, memo);
}

export interface ChainRun {
  /** After the stages, before the leaf note: what the agent will resend next call. */
  view: RequestView;
  /** What goes upstream: the stages' body with the leaf note placed. */
  body: ChatRequest;
  /** Messages [0, stableEnd) are the agent's to resend; the note is this call's only. */
  stableEnd: number;
  receipts: Receipt[];
}

export interface ChainRunOptions {
  /** Message hashes to reuse when re-segmenting after a stage (perf only). */
  carried?: (v: RequestView) => HashSource[];
  /** Called after stage i ran (stage timers); i === stages.length after the leaf note. */
  lap?: (i: number) => void;
  /** Awaited between stages (a big request yields the event loop there: perf/time-slices.ts). */
  between?: () => Promise<void>;
}

/** Runs the stages in order, then places their notes as one leaf note. */
export async function runChain(
  spec: ChainSpec,
  stages: readonly Stage[],
  start: RequestView,
  ctx: StageContext,
  opts: ChainRunOptions = {},
): Promise<ChainRun> {
  const receipts: Receipt[] = [];
  let view = start;
  const carried =
    opts.carried ?? ((v: RequestView) => [{ messages: v.body.messages, hashes: v.segments.messageHashes }]);
  for (let i = 0; i < stages.length; i++) {
    const stage = stages[i];
    const before = view.body.messages;
    const r = await stage.run(view, ctx);
    view =
      r.view.body.messages === before ? r.view : { ...r.view, segments: segment(r.view.body.messages, carried(view)) };
    for (const rc of r.receipts) receipts.push(rc.stage ? rc : { ...rc, stage: stage.name });
    opts.lap?.(i);
    if (opts.between) await opts.between();
  }
  let body = view.body;
  let stableEnd = body.messages.length;
  if (view.notes.length > 0 && spec.transforms[LEAF_NOTE_STAGE] !== false) {
    const note = view.notes.join('\n\n');
    const placed = placeLeafNote(ctx.tokenizer, body.messages, note);
    body = { ...body, messages: placed.messages };
    stableEnd = placed.stableEnd;
    receipts.push({
      stage: LEAF_NOTE_STAGE,
      action: 'append',
      target: placed.target,
      tokens_before: 0,
      tokens_after: ctx.tokenizer.countTokens(note),
      reason: 'gateway notes travel after the history, where they cost no cached prefix',
    });
  }
  return { view, body, stableEnd, receipts };
}

/** Every stage's metric declarations, by `stage\0action` (the gateway counts receipts from these). */
export function receiptMetrics(stages: readonly Stage[]): ReadonlyMap<string, ReceiptMetric> {
  const out = new Map<string, ReceiptMetric>();
  for (const s of stages) for (const m of s.metrics ?? []) for (const a of m.actions) out.set(`${s.name}\u0000${a}`, m);
  return out;
}

/** The declarations of every stage a chain can hold (compaction included): static per stage kind. */
export const RECEIPT_METRICS = receiptMetrics(contextStages({ layout: 'ctxgate', transforms: {}, budgetTokens: 1 }));
