// Pipeline stage `stabilise`: defers the agent's elisions of already-sent outputs (see
// stabilise.ts). State under SessionState.ledger.stabilise.
import type { Stage } from '../stage.ts';
import type { LedgerBundle } from '../ledger/chain.ts';
import { stabilise, type StabiliseOptions } from './stabilise.ts';

export const STABILISE_STAGE = 'stabilise';

export function createStabiliseStage(opts: StabiliseOptions = {}): Stage {
  return {
    name: STABILISE_STAGE,
    run(view) {
      const bundle = (view.session.ledger ?? {}) as LedgerBundle;
      const r = stabilise(view.body.messages, bundle.stabilise, {
        ...opts,
        frozenBelow: bundle.compaction?.watermark ?? 0,
      });
      view.session.ledger = { ...bundle, stabilise: r.state } as Record<string, unknown>;
      const changed = r.messages.some((m, i) => m !== view.body.messages[i]);
      return { view: changed ? { ...view, body: { ...view.body, messages: r.messages } } : view, receipts: r.receipts };
    },
  };
}
