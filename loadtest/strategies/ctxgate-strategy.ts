// ctxgate's own strategy, token-level: the product's context chain exactly as `ctxgate serve`
// assembles it for a model with a budget (middleware/ledger/chain.ts): the stabiliser keeps
// re-sending outputs the agent elided (until they are compacted), the observation ledger
// appends a tombstone when a read is superseded (prefix untouched), and batch compaction
// replaces the history between the pinned root/task and the latest calls by an audited
// checkpoint digest when the prompt reaches τ_high·M*, down to τ_low·M*, keeping the verbatim
// set of everything it evicts. Settings: M* = budget minus the tool schemas, the middleware's
// defaults otherwise (tombstones only, no hard eviction). O(messages) per call.
import { runContextChain, type LedgerBundle } from '../../middleware/ledger/chain.ts';
import type { LedgerOptions } from '../../middleware/ledger/ledger.ts';
import { messageKey } from './token-model.ts';
import { type Strategy } from './types.ts';

/** Read/write semantics of the synthetic agent's file tools (mini-swe/SWE-agent use presets). */
export const SYNTH_RULES: NonNullable<LedgerOptions['rules']> = [
  { tool: 'read_file', path: 'path', effect: 'read' },
  { tool: 'edit_file', path: 'path', effect: 'write' },
];

export function ctxgateStrategy(): Strategy {
  return {
    name: 'ctxgate',
    describe:
      'root kept; stabilised history (agent elisions deferred); tombstones for superseded reads; audited watermark compaction into a checkpoint digest within M*',
    start(ctx) {
      let bundle: LedgerBundle | undefined;
      return {
        async stage(raw, reserved) {
          const c = await runContextChain(raw, bundle, {
            ledger: { eviction: false, rules: SYNTH_RULES, countTokens: ctx.count, now: 0 },
            compaction: { budgetTokens: Math.max(1, ctx.budget - reserved), countTokens: ctx.count },
          });
          bundle = c.state;
          const cp = bundle.compaction;
          const watermark = cp?.checkpointMessage ? cp.watermark : 0;
          const headLen = c.messages.length - (raw.length - watermark);
          const rawKeys = raw.slice(0, watermark).map(messageKey);
          const origin = c.messages.map((m, j) =>
            j >= headLen ? watermark + (j - headLen) : rawKeys.indexOf(messageKey(m)),
          );
          const kept = new Set(origin);
          const hidden = new Set<number>();
          for (let i = 0; i < watermark; i++) if (!kept.has(i)) hidden.add(i);
          return { messages: c.messages, origin, hidden };
        },
      };
    },
  };
}
