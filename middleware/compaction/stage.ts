// Pipeline stage `compaction`: watermark-triggered batch compaction and byte-identical re-send
// of the compacted prefix (see compact.ts). Per-model budget M* and settings are bound when the
// stage is created; the artifact store is scoped by the request's tenant. State: COMPACTION_SLOT;
// reads the ledger's and the stabiliser's parts, and after a compaction makes the stabiliser
// forget its originals below the new watermark. Outcomes and tokens saved count as metrics.
// Counting: the history's texts of OFFLOAD_COUNT_MIN_CHARS or more are counted first through the
// call's render pool (ctx.countTexts: remembered there, so an old text costs no job), not with a
// BPE pass on the event loop; the rest inline, as before. The counts are the same (count-offload.ts).
import type { ArtifactStore } from '../artifacts/store.ts';
import { messageTokens } from '../ledger/message-text.ts';
import { readLedger } from '../ledger/slot.ts';
import { type CountTexts, countInSlices, OFFLOAD_COUNT_MIN_CHARS } from '../perf/count-offload.ts';
import { clearSlot, readSlot, writeSlot } from '../session/stage-state.ts';
import { forgetBelow, STABILISE_SLOT } from '../stabilise/stabilise.ts';
import type { Stage } from '../stage.ts';
import type { ChatMessage } from '../types.ts';
import { COMPACTION_SLOT, compactMessages, type CompactionOptions } from './compact.ts';

export const COMPACTION_STAGE = 'compaction';

export interface CompactionStageOptions
  extends Omit<CompactionOptions, 'countTokens' | 'ledger' | 'artifacts' | 'rawInput' | 'rawHashes'> {
  artifacts?: ArtifactStore;
}

/** The big texts compaction's count reads in `messages` (the ones messageTokens counts), or undefined. */
export function bigTexts(messages: readonly ChatMessage[]): string[] | undefined {
  let big: string[] | undefined;
  const see = (t: string): number => {
    if (t.length >= OFFLOAD_COUNT_MIN_CHARS) (big ??= []).push(t);
    return 0;
  };
  for (const m of messages) messageTokens(m, see);
  return big;
}

/** Counts of the big texts, taken off the event loop; undefined when there are none or no pool. */
async function precount(
  messages: readonly ChatMessage[],
  count: (t: string) => number,
  offload: CountTexts | undefined,
): Promise<Map<string, number> | undefined> {
  const big = offload && bigTexts(messages);
  return big ? countInSlices(big, count, offload) : undefined;
}

export function createCompactionStage(opts: CompactionStageOptions): Stage {
  const { artifacts: store, ...settings } = opts;
  return {
    name: COMPACTION_STAGE,
    settings,
    metrics: [
      {
        actions: ['compacted', 'compacted_above_low', 'refused', 'reset'],
        counter: 'compactions',
        tokensSaved: true,
      },
    ],
    async run(view, ctx) {
      const session = view.session;
      const stab = readSlot(session, STABILISE_SLOT);
      const count = (t: string): number => ctx.tokenizer.countTokens(t);
      const counted = await precount(view.body.messages, count, ctx.countTexts);
      const r = await compactMessages(view.body.messages, readSlot(session, COMPACTION_SLOT), {
        ...settings,
        countTokens: counted ? (t) => counted.get(t) ?? count(t) : count,
        ledger: readLedger(session),
        // The stabiliser's per-index hashes are the agent's own messages: the prefix binds to them.
        rawHashes: stab?.a,
        artifacts: store ? { put: (c) => store.put(ctx.tenant, c), get: (h) => store.get(ctx.tenant, h) } : undefined,
      });
      if (r.state) writeSlot(session, COMPACTION_SLOT, r.state);
      else clearSlot(session, COMPACTION_SLOT);
      if (r.compacted && stab) writeSlot(session, STABILISE_SLOT, forgetBelow(stab, r.compacted.watermark));
      const changed = r.messages !== view.body.messages;
      return { view: changed ? { ...view, body: { ...view.body, messages: r.messages } } : view, receipts: r.receipts };
    },
  };
}
