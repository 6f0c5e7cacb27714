// Pipeline stage `ledger`: observations, invalidation, tombstones appended at their fixed
// anchors (not the pipeline's leaf note: a tombstone must stay in place on every later call,
// byte for byte). State under SessionState.ledger.observations.
import type { Stage } from '../stage.ts';
import type { LedgerBundle } from './chain.ts';
import { applyLedger, type LedgerOptions } from './ledger.ts';

export const LEDGER_STAGE = 'ledger';

export function createLedgerStage(opts: Omit<LedgerOptions, 'countTokens'> = {}): Stage {
  return {
    name: LEDGER_STAGE,
    run(view, ctx) {
      const bundle = (view.session.ledger ?? {}) as LedgerBundle;
      const r = applyLedger(view.body.messages, bundle.observations, { ...opts, countTokens: (t) => ctx.tokenizer.encodeCached(t).length });
      view.session.ledger = { ...bundle, observations: r.state } as Record<string, unknown>;
      const changed = r.messages.some((m, i) => m !== view.body.messages[i]);
      return { view: changed ? { ...view, body: { ...view.body, messages: r.messages } } : view, receipts: r.receipts };
    },
  };
}
