// Pipeline stage `compaction`: watermark-triggered batch compaction and byte-identical re-send
// of the compacted prefix (see compact.ts). Per-model budget M* and settings are bound when the
// stage is created; the artifact store is scoped by the request's tenant. State under
// SessionState.ledger.compaction; after a compaction the stabiliser forgets originals below it.
import type { Stage } from '../stage.ts';
import type { ArtifactStore } from '../artifacts/store.ts';
import type { LedgerBundle } from '../ledger/chain.ts';
import { forgetBelow } from '../stabilise/stabilise.ts';
import { compactMessages, type CompactionOptions } from './compact.ts';

export const COMPACTION_STAGE = 'compaction';

export interface CompactionStageOptions
  extends Omit<CompactionOptions, 'countTokens' | 'ledger' | 'artifacts' | 'rawInput' | 'rawHashes'> {
  artifacts?: ArtifactStore;
}

export function createCompactionStage(opts: CompactionStageOptions): Stage {
  return {
    name: COMPACTION_STAGE,
    async run(view, ctx) {
      const bundle = (view.session.ledger ?? {}) as LedgerBundle;
      const store = opts.artifacts;
      const r = await compactMessages(view.body.messages, bundle.compaction, {
        ...opts,
        countTokens: (t) => ctx.tokenizer.encodeCached(t).length,
        ledger: bundle.observations,
        // The stabiliser's per-index hashes are the agent's own messages: the prefix binds to them.
        rawHashes: bundle.stabilise?.a,
        artifacts: store ? { put: (c) => store.put(ctx.tenant, c), get: (h) => store.get(ctx.tenant, h) } : undefined,
      });
      const next: LedgerBundle = { ...bundle, compaction: r.state };
      if (r.compacted && next.stabilise) next.stabilise = forgetBelow(next.stabilise, r.compacted.watermark);
      view.session.ledger = next as Record<string, unknown>;
      const changed = r.messages !== view.body.messages;
      return { view: changed ? { ...view, body: { ...view.body, messages: r.messages } } : view, receipts: r.receipts };
    },
  };
}
