// Token counts of a big call's new tool outputs, taken before the ledger runs, in slices: the
// ledger counts each new observation's text with a BPE pass on the event loop (~50 ns a
// character: ~50 ms for 1M characters of fresh tool output in one call, during which no other
// tenant's request, nor /health, is served). When the new texts reach PRECOUNT_MIN_CHARS they are
// counted here, the event loop yielded after every ~PRECOUNT_SLICE_CHARS characters, and the
// ledger reads the counts back: the same function on the same texts, so every count, decision and
// receipt is the one the ledger would have made inline. One text is never cut (a count over a cut
// would differ at the cut): a text of OFFLOAD_COUNT_MIN_CHARS or more is counted on a render pool
// thread when the call has one (ctx.countTexts; perf/count-offload.ts), else it is one ~50n ns slice.
// Which texts: the messages from the ledger's `seen` on that it may observe (tool results; user
// turns after a text-mode command). An over-approximation only costs a count never read; a text
// left out is counted inline by the ledger, as before. O(new messages) to choose; small calls
// (below PRECOUNT_MIN_CHARS) return undefined and run the ledger synchronously as before.
import { COUNT_SLICE_CHARS, type CountTexts, countInSlices } from '../perf/count-offload.ts';
import { DEFAULT_SLICE_MIN_CHARS } from '../perf/time-slices.ts';
import type { ChatMessage } from '../types.ts';
import { messageText } from './message-text.ts';
import type { LedgerState } from './types.ts';

/** New observation text (characters) from which a call's counts are taken in slices. */
export const PRECOUNT_MIN_CHARS = DEFAULT_SLICE_MIN_CHARS;
/** Characters counted between two yields (~1.6 ms of BPE at ~50 ns a character). */
export const PRECOUNT_SLICE_CHARS = COUNT_SLICE_CHARS;

/** The texts the ledger may count on this call when they reach PRECOUNT_MIN_CHARS, else undefined. */
export function precountTexts(input: readonly ChatMessage[], prev: LedgerState | undefined): string[] | undefined {
  // A rewound history restarts the ledger at 0 (ledger.ts); a text missed here is counted inline.
  const from = prev && prev.seen <= input.length ? prev.seen : 0;
  let textMode = prev !== undefined && hasTextCall(prev.open);
  let firstUser = input.findIndex((m) => m.role === 'user');
  if (firstUser < 0) firstUser = input.length;
  const texts: string[] = [];
  let chars = 0;
  for (let i = from; i < input.length; i++) {
    const m = input[i];
    if (m.role === 'assistant') {
      if (!m.tool_calls?.length) textMode = true;
      continue;
    }
    if (m.role !== 'tool' && !(m.role === 'user' && i > firstUser && textMode)) continue;
    const text = messageText(m);
    if (text.length === 0) continue;
    texts.push(text);
    chars += text.length;
  }
  return chars >= PRECOUNT_MIN_CHARS ? texts : undefined;
}

/** Whether a text-mode command is open. A for-in over the record (its own keys: it has no
 * prototype, or a plain one from JSON), not Object.keys: no key array built per call. */
function hasTextCall(open: LedgerState['open']): boolean {
  for (const k in open) if (k.startsWith('text-') && Object.hasOwn(open, k)) return true;
  return false;
}

/**
 * Each text's count: the big ones (OFFLOAD_COUNT_MIN_CHARS) on a render pool thread when the call
 * has one (`offload`), the others here, yielding the event loop after every PRECOUNT_SLICE_CHARS.
 */
export function precountSliced(
  texts: readonly string[],
  count: (text: string) => number,
  offload?: CountTexts,
): Promise<Map<string, number>> {
  return countInSlices(texts, count, offload);
}
