// Baseline strategies (docs/architecture.md, "Measuring a context strategy"): the full log, a sliding window of W tokens (system prompt
// plus the newest messages that fit), and observation masking (tool outputs older than the last
// M replaced by a one-line placeholder). O(messages) per call.
import type { ChatMessage } from '../../middleware/types.ts';
import { elidedText } from '../profiles/last-n-elision.ts';
import { identity, observationIndexes, textOf, type Strategy } from './types.ts';

export const DEFAULT_MASK_KEEP = 5;
const PER_MESSAGE = 4;

export const fullLog: Strategy = {
  name: 'full-log',
  describe: 'every message of the history, every call (what agents send by default)',
  start: () => ({ stage: identity }),
};

export function slidingWindow(): Strategy {
  return {
    name: 'sliding-window',
    describe:
      'leading system prompt + the newest messages that fit in the budget W (the task falls out once it is old)',
    start(ctx) {
      return {
        stage(raw, reserved) {
          let root = 0;
          while (root < raw.length && (raw[root].role === 'system' || raw[root].role === 'developer')) root++;
          const tok = (m: ChatMessage) => ctx.count(textOf(m) + JSON.stringify(m.tool_calls ?? '')) + PER_MESSAGE;
          let used = reserved + raw.slice(0, root).reduce((a, m) => a + tok(m), 0);
          let start = raw.length;
          while (start > root && used + tok(raw[start - 1]) <= ctx.budget) used += tok(raw[--start]);
          if (start === raw.length && start > root) start--; // always send the newest message
          while (start < raw.length - 1 && raw[start].role === 'tool') start++; // no orphan tool results
          const keep = [
            ...Array.from({ length: root }, (_, i) => i),
            ...Array.from({ length: raw.length - start }, (_, i) => start + i),
          ];
          return { messages: keep.map((i) => raw[i]), origin: keep, hidden: new Set() };
        },
      };
    },
  };
}

export function observationMasking(keep = DEFAULT_MASK_KEEP): Strategy {
  return {
    name: 'observation-masking',
    describe: `tool outputs older than the last M (${keep}) replaced in place by a one-line placeholder`,
    start() {
      return {
        stage(raw) {
          const obs = observationIndexes(raw);
          const old = obs.slice(0, Math.max(0, obs.length - keep));
          const hidden = new Set(old);
          const messages = raw.map((m, i) =>
            hidden.has(i) ? { ...m, content: elidedText(textOf(m).split('\n').length) } : m,
          );
          return { messages, origin: raw.map((_, i) => i), hidden };
        },
      };
    },
  };
}
