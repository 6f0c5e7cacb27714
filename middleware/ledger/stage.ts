// Pipeline stage `ledger`: observations, invalidation, tombstones appended at their fixed
// anchors (not the pipeline's leaf note: a tombstone must stay in place on every later call,
// byte for byte). State: LEDGER_SLOT, written as v2 or, during a rolling upgrade, v1 (slot.ts
// writeLedger; `writeVersion`). Nothing is ever hard-evicted here (no cost model is
// passed): removal happens only in a budgeted compaction batch. On a session's first call the
// ledger only learns: the body passes unchanged (frame escaping aside) and tombstones found then
// are placed from the second call on, at the same anchor. Tombstones count as a metric.
import type { Stage } from '../stage.ts';
import { applyLedger, render, type LedgerOptions } from './ledger.ts';
import { DEFAULT_LEDGER_WRITE_VERSION, type LedgerWriteVersion, readLedger, writeLedger } from './slot.ts';

export const LEDGER_STAGE = 'ledger';

export interface LedgerStageOptions extends Omit<LedgerOptions, 'countTokens' | 'now'> {
  /** Shape the ledger's part is stored with (read: either). Default DEFAULT_LEDGER_WRITE_VERSION. */
  writeVersion?: LedgerWriteVersion;
}

export function createLedgerStage(stageOpts: LedgerStageOptions = {}): Stage {
  const { writeVersion = DEFAULT_LEDGER_WRITE_VERSION, ...opts } = stageOpts;
  return {
    name: LEDGER_STAGE,
    settings: { ...opts, writeVersion },
    metrics: [{ actions: ['tombstone'], counter: 'tombstones' }],
    run(view, ctx) {
      const input = view.body.messages;
      const r = applyLedger(input, readLedger(view.session), {
        ...opts,
        countTokens: (t) => ctx.tokenizer.encodeCached(t).length,
        ...(ctx.now ? { now: Math.floor(ctx.now() / 1000) } : {}),
      });
      writeLedger(view.session, r.state, writeVersion);
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
    },
  };
}
