// Pipeline stage `stabilise`: defers the agent's elisions of already-sent outputs (see
// stabilise.ts). State: STABILISE_SLOT; reads compaction's watermark (edits below it are not its to judge).
import { COMPACTION_SLOT } from '../compaction/compact.ts';
import { readSlot, writeSlot } from '../session/stage-state.ts';
import type { Stage } from '../stage.ts';
import { STABILISE_SLOT, stabilise, type StabiliseOptions } from './stabilise.ts';

export const STABILISE_STAGE = 'stabilise';

export function createStabiliseStage(opts: StabiliseOptions = {}): Stage {
  return {
    name: STABILISE_STAGE,
    settings: { ...opts },
    run(view) {
      const r = stabilise(view.body.messages, readSlot(view.session, STABILISE_SLOT), {
        ...opts,
        frozenBelow: readSlot(view.session, COMPACTION_SLOT)?.watermark ?? 0,
      });
      writeSlot(view.session, STABILISE_SLOT, r.state);
      const changed = r.messages !== view.body.messages;
      return { view: changed ? { ...view, body: { ...view.body, messages: r.messages } } : view, receipts: r.receipts };
    },
  };
}
