// Pipeline stage `stabilise`: defers the agent's elisions of already-sent outputs (see
// stabilise.ts). State: STABILISE_SLOT; reads compaction's watermark (edits below it are not its to judge).
// The secret checks of new originals run after the upstream send (settleOwed), and so, when no
// later stage reads this state on the call (`oweHashes`: no compaction), do the hashes and
// identities of the messages past the previous call's (settleHashes).
import { COMPACTION_SLOT } from '../compaction/compact.ts';
import { readSlot, writeSlot } from '../session/stage-state.ts';
import type { Stage } from '../stage.ts';
import { afterSend } from '../after-send.ts';
import { settleHashes, settleOwed, STABILISE_SLOT, stabilise, type StabiliseOptions } from './stabilise.ts';

export const STABILISE_STAGE = 'stabilise';

/** How the chain runs the stage (not a setting: the state and body are the same either way). */
export interface StabiliseRun {
  /** No later stage reads or copies the stabiliser's state on the call (chain.ts: no compaction). */
  oweHashes?: boolean;
}

export function createStabiliseStage(opts: StabiliseOptions = {}, how: StabiliseRun = {}): Stage {
  return {
    name: STABILISE_STAGE,
    settings: { ...opts },
    run(view, ctx) {
      const session = view.session;
      // Every StabiliseOptions key written out, in one shape for every call (no spread per call).
      const r = stabilise(view.body.messages, readSlot(session, STABILISE_SLOT), {
        enabled: opts.enabled,
        maxBytes: opts.maxBytes,
        frozenBelow: readSlot(session, COMPACTION_SLOT)?.watermark ?? 0,
        oweSecretChecks: true,
        oweHashes: how.oweHashes === true && ctx.afterSend !== undefined,
      });
      writeSlot(session, STABILISE_SLOT, r.state);
      // The new messages' hashes (the next call's to read): after the send, first (settleOwed may copy the state).
      if (r.owedHashes !== undefined) ctx.afterSend!(settleHashes.bind(undefined, r.state, r.owedHashes));
      // New originals' secret checks read nothing the upstream body needs: after the send, on the
      // slot as the call's later stages left it, before the state is stored.
      const owed = r.owed;
      if (owed !== undefined)
        afterSend(ctx, () => {
          const cur = readSlot(session, STABILISE_SLOT);
          if (cur !== undefined) writeSlot(session, STABILISE_SLOT, settleOwed(cur, owed));
        });
      const changed = r.messages !== view.body.messages;
      return { view: changed ? { ...view, body: { ...view.body, messages: r.messages } } : view, receipts: r.receipts };
    },
  };
}
