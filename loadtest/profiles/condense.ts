// condense: OpenHands LLMSummarizingCondenser. When the history passes max_size messages, the
// middle (after keep_first) is replaced by one summary message and a recent tail of max_size/2
// stays; the summary is stable until the next condensation, so the prefix breaks once per
// condensation at the summary position. The summary here is a deterministic digest of the
// condensed actions (no model in the loop). O(messages) per call.
import type { ChatMessage } from '../../middleware/types.ts';
import { cloneJson, type Profile } from './types.ts';

export const DEFAULT_CONDENSE_MAX_MESSAGES = 60;
export const DEFAULT_CONDENSE_KEEP_FIRST = 2;
const SUMMARY_MAX_ITEMS = 40;
const SUMMARY_ITEM_CHARS = 120;

function firstLine(m: ChatMessage): string {
  const t =
    typeof m.content === 'string'
      ? m.content
      : Array.isArray(m.content)
        ? m.content.map((p) => p.text ?? '').join('')
        : '';
  return t.replace(/\s+/g, ' ').trim().slice(0, SUMMARY_ITEM_CHARS);
}

export function summarise(condensed: ChatMessage[], prior: string | undefined): string {
  const items: string[] = [];
  for (const m of condensed) {
    if (m.role === 'assistant' && m.tool_calls?.length) {
      for (const tc of m.tool_calls)
        items.push(`- ran ${tc.function.name} ${tc.function.arguments.slice(0, SUMMARY_ITEM_CHARS)}`);
    } else if (m.role === 'assistant') items.push(`- said: ${firstLine(m)}`);
    else if (m.role === 'tool' || m.role === 'user') items.push(`- observed: ${firstLine(m)}`);
  }
  const kept = items.slice(-SUMMARY_MAX_ITEMS);
  const head = prior ? `${prior}\n` : '<CONDENSATION>\nSummary of earlier events:\n';
  return `${head}${kept.join('\n')}`;
}

/** Index where the kept tail starts: never on a tool result whose call was condensed away. */
function tailStart(messages: ChatMessage[], want: number, floor: number): number {
  let i = Math.max(floor, Math.min(want, messages.length - 1));
  while (i > floor && messages[i].role === 'tool') i--;
  return i;
}

export const condense: Profile = {
  name: 'condense',
  describe:
    'OpenHands LLMSummarizingCondenser: past --condense-max messages (default 60) the middle of the history becomes one summary message, keeping the first 2 messages and a recent tail of half the limit',
  apply(session, opts) {
    const max = opts.condenseMaxMessages ?? DEFAULT_CONDENSE_MAX_MESSAGES;
    const keepFirst = opts.condenseKeepFirst ?? DEFAULT_CONDENSE_KEEP_FIRST;
    let cut = keepFirst;
    let summary: string | undefined;
    const view = (m: ChatMessage[]): ChatMessage[] => [
      ...m.slice(0, keepFirst),
      ...(summary !== undefined ? [{ role: 'user', content: summary } as ChatMessage] : []),
      ...m.slice(cut),
    ];
    const calls = session.calls.map((c) => {
      const body = cloneJson(c.body);
      const m = body.messages;
      if (m.length < cut) {
        // not an extension of the previous call (a new conversation): start over
        cut = keepFirst;
        summary = undefined;
      }
      if (view(m).length > max) {
        const next = tailStart(m, m.length - Math.floor(max / 2), cut);
        if (next > cut) {
          summary = summarise(m.slice(cut, next), summary);
          cut = next;
        }
      }
      body.messages = view(m);
      return { ...c, body };
    });
    return { ...session, calls };
  },
};
