// ctxgate's own strategy, token-level, built from the middleware's pure stages: the observation
// ledger (middleware/ledger) appends a tombstone when a read is superseded (prefix untouched);
// batch compaction (middleware/compaction/compact) replaces the history between the pinned
// root/task and the latest calls by an audited checkpoint with a digest built cheapest-first
// when the prompt reaches τ_high·M*, down to τ_low·M*; observations still verbatim are
// lossless-filtered (ANSI, progress bars, diff context) the first time they are staged, so
// their bytes never change afterwards. Settings: M* = budget minus the tool schemas, the
// middleware's defaults otherwise. O(messages) per call plus memoised transforms.
import { compactMessages, type CompactionState } from '../../middleware/compaction/compact.ts';
import { losslessFilter } from '../../middleware/compaction/lossless.ts';
import { applyLedger, type LedgerOptions } from '../../middleware/ledger/ledger.ts';
import type { LedgerState } from '../../middleware/ledger/types.ts';
import type { ChatMessage } from '../../middleware/types.ts';
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
    describe: 'root kept; lossless filtering; tombstones for superseded reads; audited watermark compaction into a checkpoint digest within M*',
    start(ctx) {
      let ledger: LedgerState | undefined;
      let compaction: CompactionState | undefined;
      const memo = new Map<string, string>();
      const lossless = (t: string) => {
        let v = memo.get(t);
        if (v === undefined) memo.set(t, (v = losslessFilter(t)));
        return v;
      };
      return {
        async stage(raw, reserved) {
          const l = applyLedger(raw, ledger, { eviction: false, rules: SYNTH_RULES, countTokens: ctx.count, now: 0 });
          ledger = l.state;
          const c = await compactMessages(l.messages, compaction, {
            budgetTokens: Math.max(1, ctx.budget - reserved),
            countTokens: ctx.count,
            ledger: l.state,
            rawInput: raw,
          });
          compaction = c.state;
          const watermark = c.state?.watermark ?? 0;
          const headLen = c.messages.length - (raw.length - watermark);
          const rawKeys = raw.slice(0, watermark).map(messageKey);
          const origin = c.messages.map((m, j) => (j >= headLen ? watermark + (j - headLen) : rawKeys.indexOf(messageKey(m))));
          const kept = new Set(origin);
          const hidden = new Set<number>();
          for (let i = 0; i < watermark; i++) if (!kept.has(i)) hidden.add(i);
          const firstUser = raw.findIndex((m) => m.role === 'user');
          const messages = c.messages.map((m: ChatMessage, j) =>
            origin[j] > firstUser && (m.role === 'tool' || m.role === 'user') && typeof m.content === 'string' ? { ...m, content: lossless(m.content) } : m,
          );
          return { messages, origin, hidden };
        },
      };
    },
  };
}
