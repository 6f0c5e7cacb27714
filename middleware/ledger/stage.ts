// Pipeline stage `ledger`: observations, invalidation, tombstones appended at their fixed
// anchors (not the pipeline's leaf note: a tombstone must stay in place on every later call,
// byte for byte). State: LEDGER_SLOT, written as v2 or, during a rolling upgrade, v1 (slot.ts
// writeLedger; `writeVersion`). Nothing is ever hard-evicted here (no cost model is
// passed): removal happens only in a budgeted compaction batch. On a session's first call the
// ledger only learns: the body passes unchanged (frame escaping aside) and tombstones found then
// are placed from the second call on, at the same anchor. Tombstones count as a metric.
// A call whose new tool outputs are big (precount.ts) has their token counts taken first, in
// slices with the event loop yielded between them, so one tenant's 1M-character call does not
// hold every other request for the whole BPE pass; the ledger then reads those same counts.
import type { Stage, StageContext, StageResult, RequestView } from '../stage.ts';
import { beginLedger, render, type LedgerOptions } from './ledger.ts';
import type { CountTokens } from './message-text.ts';
import { precountSliced, precountTexts } from './precount.ts';
import { DEFAULT_LEDGER_WRITE_VERSION, type LedgerWriteVersion, readLedger, writeLedger } from './slot.ts';

export const LEDGER_STAGE = 'ledger';

export interface LedgerStageOptions extends Omit<LedgerOptions, 'countTokens' | 'now'> {
  /** Shape the ledger's part is stored with (read: either). Default DEFAULT_LEDGER_WRITE_VERSION. */
  writeVersion?: LedgerWriteVersion;
}

export function createLedgerStage(stageOpts: LedgerStageOptions = {}): Stage {
  const { writeVersion = DEFAULT_LEDGER_WRITE_VERSION, ...opts } = stageOpts;
  const apply = (
    view: RequestView,
    ctx: StageContext,
    now: number | undefined,
    counted: ReadonlyMap<string, number> | undefined,
  ): StageResult => {
    const input = view.body.messages;
    const r = beginLedger(input, readLedger(view.session), callOptions(opts, counterOf(ctx.tokenizer, counted), now));
    // The part is written now (compaction reads it on this call) and completed in place by finish.
    writeLedger(view.session, r.state, writeVersion);
    r.finish();
    let { messages, receipts } = r;
    if (ctx.newSession && (r.state.tombstones.length > 0 || r.state.evictions.length > 0)) {
      messages = render(input, { ...r.state, tombstones: [], evictions: [] });
      receipts = receipts.map((x) =>
        x.action === 'tombstone' || x.action === 'evict'
          ? { ...x, reason: `${x.reason}; placed from the next call on (a first call passes unchanged)` }
          : x,
      );
    }
    const changed = messages !== input && messages.some((m, i) => m !== input[i]);
    return { view: changed ? { ...view, body: { ...view.body, messages } } : view, receipts };
  };
  return {
    name: LEDGER_STAGE,
    settings: { ...opts, writeVersion },
    metrics: [{ actions: ['tombstone'], counter: 'tombstones' }],
    run(view, ctx) {
      // Read before any slice yields: the clock the ledger sees is the one its call started at.
      const now = ctx.now ? Math.floor(ctx.now() / 1000) : undefined;
      const texts = precountTexts(view.body.messages, readLedger(view.session));
      if (texts === undefined) return apply(view, ctx, now, undefined);
      return precountSliced(texts, (t) => ctx.tokenizer.countTokens(t), ctx.countTexts).then((counted) =>
        apply(view, ctx, now, counted),
      );
    },
  };
}

/** The options of one call: the stage's, the call's counter and clock. Every LedgerOptions key
 * written out (an absent one as undefined, which beginLedger reads as absent), in one shape for
 * every call, instead of spreads that build the object key by key each call. */
function callOptions(
  opts: Omit<LedgerOptions, 'countTokens' | 'now'>,
  countTokens: CountTokens,
  now: number | undefined,
): LedgerOptions {
  return {
    countTokens,
    cwd: opts.cwd,
    rules: opts.rules,
    now,
    eviction: opts.eviction,
    maxObservations: opts.maxObservations,
  };
}

/** The stage's token count: the precounted figure where there is one, else the tokenizer's. An
 * anonymous arrow from a function: tsx (esbuild keepNames) names every `const f = () =>`, a
 * defineProperty of ~1 µs per call. */
function counterOf(
  tok: StageContext['tokenizer'],
  counted: ReadonlyMap<string, number> | undefined,
): (t: string) => number {
  return counted ? (t) => counted.get(t) ?? tok.countTokens(t) : (t) => tok.countTokens(t);
}
