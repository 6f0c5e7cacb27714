// Pipeline stage `ledger`: observations, invalidation, tombstones appended at their fixed
// anchors (not the pipeline's leaf note: a tombstone must stay in place on every later call,
// byte for byte). State: LEDGER_SLOT. Nothing is ever hard-evicted here (no cost model is
// passed): removal happens only in a budgeted compaction batch. On a session's first call the
// ledger only learns: the body passes unchanged (frame escaping aside) and tombstones found then
// are placed from the second call on, at the same anchor. Tombstones count as a metric.
import { writeSlot } from '../session/stage-state.ts';
import type { Stage } from '../stage.ts';
import { applyLedger, render, type LedgerOptions } from './ledger.ts';
import { readLedger } from './slot.ts';
import { LEDGER_SLOT } from './types.ts';

export const LEDGER_STAGE = 'ledger';

export function createLedgerStage(opts: Omit<LedgerOptions, 'countTokens' | 'now'> = {}): Stage {
  return {
    name: LEDGER_STAGE,
    settings: { ...opts },
    metrics: [{ actions: ['tombstone'], counter: 'tombstones' }],
    run(view, ctx) {
      const input = view.body.messages;
      const r = applyLedger(input, readLedger(view.session), {
        ...opts,
        countTokens: (t) => ctx.tokenizer.encodeCached(t).length,
        ...(ctx.now ? { now: Math.floor(ctx.now() / 1000) } : {}),
      });
      writeSlot(view.session, LEDGER_SLOT, r.state);
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
