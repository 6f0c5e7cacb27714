// ctxgate's own strategy, token-level: the observation ledger (middleware/ledger) appends a
// tombstone when a read is superseded (prefix untouched); every observation is lossless-filtered
// (middleware/compaction/lossless) the first time it is staged, so its bytes never change; when
// the staged set reaches τ_high·M* the oldest observations are compacted in one batch down to
// τ_low·M*: first structured extraction (compaction/extract), then a pointer that keeps the
// observation's verbatim set (compaction/verbatim), and only when that is not enough a one-line
// pointer. The root (system, task) is never touched.
// Settings: M* = budget, τ_high 0.8, τ_low 0.5, newest KEEP_RECENT messages never compacted.
// O(messages) per call plus memoised transforms.
import { extractStructured } from '../../middleware/compaction/extract.ts';
import { losslessFilter } from '../../middleware/compaction/lossless.ts';
import { verbatimSet } from '../../middleware/compaction/verbatim.ts';
import { applyLedger, type LedgerOptions } from '../../middleware/ledger/ledger.ts';
import type { LedgerState } from '../../middleware/ledger/types.ts';
import type { ChatMessage } from '../../middleware/types.ts';
import { isFramedNote } from '../../middleware/redaction/framing.ts';
import { observationIndexes, textOf, type Strategy } from './types.ts';

export const TAU_HIGH = 0.8;
export const TAU_LOW = 0.5;
export const KEEP_RECENT = 4;
const PER_MESSAGE = 4;
const POINTER_MAX_ITEMS = 40;

/** Read/write semantics of the synthetic agent's file tools (mini-swe/SWE-agent use presets). */
export const SYNTH_RULES: NonNullable<LedgerOptions['rules']> = [
  { tool: 'read_file', path: 'path', effect: 'read' },
  { tool: 'edit_file', path: 'path', effect: 'write' },
];

export function pointerText(text: string, call: number): string {
  const notes = text.split('\n').filter(isFramedNote);
  const items = verbatimSet(losslessFilter(text)).slice(0, POINTER_MAX_ITEMS);
  const head = `[ctxgate] output of step ${call} compacted (${text.split('\n').length} lines); verbatim kept:`;
  return [head, ...items, ...notes].join('\n');
}

/** Last resort when even pointers do not fit: the step and its framed notes only. */
export function barePointer(text: string, call: number): string {
  return [`[ctxgate] output of step ${call} compacted (${text.split('\n').length} lines)`, ...text.split('\n').filter(isFramedNote)].join('\n');
}

export function ctxgateStrategy(): Strategy {
  return {
    name: 'ctxgate',
    describe: 'root kept, lossless filtering, tombstones for superseded reads, watermark compaction (extract, then verbatim-keeping pointers) within M*',
    start(ctx) {
      let ledger: LedgerState | undefined;
      const level = new Map<number, 1 | 2 | 3>();
      const memo = new Map<string, string>();
      const transform = (text: string, lvl: 0 | 1 | 2 | 3, idx: number): string => {
        const key = `${lvl}\u0000${idx}\u0000${text}`;
        let v = memo.get(key);
        if (v === undefined) {
          v =
            lvl === 0 ? losslessFilter(text)
            : lvl === 1 ? extractStructured(losslessFilter(text))
            : lvl === 2 ? pointerText(text, idx)
            : barePointer(text, idx);
          memo.set(key, v);
        }
        return v;
      };
      const tok = (m: ChatMessage) => ctx.count(textOf(m) + JSON.stringify(m.tool_calls ?? '')) + PER_MESSAGE;
      return {
        stage(raw, reserved) {
          const r = applyLedger(raw, ledger, { eviction: false, rules: SYNTH_RULES, countTokens: ctx.count, now: 0 });
          ledger = r.state;
          const obs = observationIndexes(r.messages);
          const obsSet = new Set(obs);
          const render = () =>
            r.messages.map((m, i) => (obsSet.has(i) && typeof m.content === 'string' ? { ...m, content: transform(m.content, level.get(i) ?? 0, i) } : m));
          let out = render();
          let total = reserved + out.reduce((a, m) => a + tok(m), 0);
          if (total >= TAU_HIGH * ctx.budget) {
            const candidates = obs.filter((i) => i < r.messages.length - KEEP_RECENT);
            for (const target of [1, 2, 3] as const) {
              for (const i of candidates) {
                if (total <= TAU_LOW * ctx.budget) break;
                if ((level.get(i) ?? 0) >= target) continue;
                const before = tok(out[i]);
                level.set(i, target);
                out[i] = { ...out[i], content: transform(r.messages[i].content as string, target, i) };
                total += tok(out[i]) - before;
              }
            }
            out = render();
          }
          const hidden = new Set([...level].filter(([, l]) => l >= 2).map(([i]) => i));
          return { messages: out, origin: out.map((_, i) => i), hidden };
        },
      };
    },
  };
}
