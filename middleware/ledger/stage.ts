// Pipeline stage `ledger`: observations, invalidation, tombstones appended at their fixed
// anchors (not the pipeline's leaf note: a tombstone must stay in place on every later call,
// byte for byte). State under SessionState.ledger.observations. Nothing is ever hard-evicted
// here (no cost model is passed): removal happens only in a budgeted compaction batch. On a
// session's first call the ledger only learns: the body passes unchanged (frame escaping aside)
// and tombstones found then are placed from the second call on, at the same anchor.
import type { Stage } from '../stage.ts';
import type { LedgerBundle } from './chain.ts';
import { applyLedger, render, type LedgerOptions } from './ledger.ts';

export const LEDGER_STAGE = 'ledger';

export function createLedgerStage(opts: Omit<LedgerOptions, 'countTokens'> = {}): Stage {
  return {
    name: LEDGER_STAGE,
    run(view, ctx) {
      const bundle = (view.session.ledger ?? {}) as LedgerBundle;
      const input = view.body.messages;
      const r = applyLedger(input, bundle.observations, {
        ...opts,
        countTokens: (t) => ctx.tokenizer.encodeCached(t).length,
      });
      view.session.ledger = { ...bundle, observations: r.state } as Record<string, unknown>;
      let { messages, receipts } = r;
      if (ctx.newSession && (r.state.tombstones.length > 0 || r.state.evictions.length > 0)) {
        messages = render(input, { ...r.state, tombstones: [], evictions: [] });
        receipts = receipts.map((x) =>
          x.action === 'tombstone' || x.action === 'evict'
            ? { ...x, reason: `${x.reason}; placed from the next call on (a first call passes unchanged)` }
            : x,
        );
      }
      const changed = messages.some((m, i) => m !== input[i]);
      return { view: changed ? { ...view, body: { ...view.body, messages } } : view, receipts };
    },
  };
}
