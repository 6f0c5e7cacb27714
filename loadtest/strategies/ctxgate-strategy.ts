// ctxgate's own strategy, token-level: the product's context chain exactly as `ctxgate serve`
// runs it (middleware/chain.ts: the same stage list, in the same order, from the same config
// mapping, gateway/assemble.ts chainSpecOf): canonical tools, learned volatile lines to the
// leaf note, the stabiliser re-sending outputs the agent elided (until they are compacted), the
// observation ledger appending a tombstone when a read is superseded (prefix untouched), and
// batch compaction replacing the history between the pinned root/task and the latest calls by
// an audited checkpoint digest when the prompt reaches τ_high·M*, down to τ_low·M*. The only
// differences from serve: the clock is virtual (0), the artifact store is in memory, and no
// prompt is rendered or routed.
// O(messages) per call.
import { MemoryArtifactStore } from '../../middleware/artifacts/store.ts';
import { chainInput, contextStages, describeChain, runChain, type ChainSpec } from '../../middleware/chain.ts';
import { COMPACTION_SLOT } from '../../middleware/compaction/compact.ts';
import { segment } from '../../middleware/layout/segmentation.ts';
import { freshSessionState } from '../../middleware/session/fresh-state.ts';
import { readSlot } from '../../middleware/session/stage-state.ts';
import type { TokenizerHandle } from '../../middleware/tokens/handle.ts';
import type { ChainDescription, ToolDef } from '../../middleware/types.ts';
import { messageKey } from './token-model.ts';
import type { Strategy } from './types.ts';

export const STRATEGY_MODEL = 'bench';

export interface CtxgateStrategy extends Strategy {
  /** What runs: the same description serve's pipeline gives (tests compare them). */
  readonly chain: ChainDescription;
}

export function ctxgateStrategy(spec: ChainSpec, tokenizer: TokenizerHandle, blockSize: number): CtxgateStrategy {
  // Serve always has an artifact store (memory by default): the checkpoint names what it kept.
  const stages = contextStages(spec, { artifacts: new MemoryArtifactStore() });
  return {
    name: 'ctxgate',
    describe:
      'the served chain: canonical tools, learned volatile lines to the leaf note, stabilised history (agent elisions deferred), tombstones for superseded reads, audited watermark compaction into a checkpoint digest within M*',
    chain: describeChain(spec, stages),
    start() {
      const session = freshSessionState('bench', 'strategy', STRATEGY_MODEL, { model: STRATEGY_MODEL, messages: [] });
      let calls = 0;
      return {
        async stage(raw, _reserved, tools?: ToolDef[]) {
          const body = chainInput(spec, { model: STRATEGY_MODEL, messages: raw, ...(tools ? { tools } : {}) });
          const c = await runChain(
            spec,
            stages,
            { body, segments: segment(body.messages, []), session, notes: [] },
            {
              tenant: 'bench',
              requestId: `strategy#${calls}`,
              model: STRATEGY_MODEL,
              sessionId: 'strategy',
              newSession: calls++ === 0,
              headers: {},
              tokenizer,
              blockSize,
              transforms: spec.transforms,
              now: () => 0,
            },
          );
          const cp = readSlot(session, COMPACTION_SLOT);
          const watermark = cp?.checkpointMessage ? cp.watermark : 0;
          // The stages' messages map back to raw indexes; a leaf note message is the strategy's own.
          const stagedLen = c.view.body.messages.length;
          const headLen = stagedLen - (raw.length - watermark);
          const rawKeys = raw.slice(0, watermark).map(messageKey);
          const origin = c.body.messages.map((m, j) =>
            j >= stagedLen ? -1 : j >= headLen ? watermark + (j - headLen) : rawKeys.indexOf(messageKey(m)),
          );
          const kept = new Set(origin);
          const hidden = new Set<number>();
          for (let i = 0; i < watermark; i++) if (!kept.has(i)) hidden.add(i);
          return { messages: c.body.messages, origin, hidden, tools: c.body.tools };
        },
      };
    },
  };
}
