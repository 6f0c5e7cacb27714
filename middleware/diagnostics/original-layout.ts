// Counterfactual for savings attribution: how many prompt tokens the worker's prefix cache would
// have served had the agent's ORIGINAL messages been sent instead of ctxgate's layout. Estimated
// from message hashes, without rendering the original body a second time: the original prompt
// keeps its cache up to the first original message that differs from the previous call's
// original (k), so its cached prefix ends where message k begins in this call's render (the last
// special-token cut before it), never beyond what this layout itself predicts. O(messages) plus a
// binary search over the cuts. Conservative by construction: when nothing differs in the original
// (k covers the previous call) the estimate equals this layout's prediction, so the layout is
// credited nothing; a previous call served by another replica (no hashes here) likewise.
import { flattenContent } from '../tokens/template-input.ts';
import type { TokenCuts } from '../tokens/segment-tokens.ts';
import type { ChatMessage } from '../types.ts';

export interface OriginalLayoutInput {
  /** Message hashes of the previous call's original body (undefined: no previous call here). */
  prevHashes?: readonly string[];
  /** Message hashes of this call's original body. */
  curHashes: readonly string[];
  /** Cached tokens this call's layout predicts (diagnostics). */
  predicted: number;
  /** This call's rendered prompt, the messages rendered, and the token cuts of the render. */
  text: string;
  messages: readonly ChatMessage[];
  cuts: TokenCuts;
  blockSize: number;
}

function leadingEqual(a: readonly string[], b: readonly string[]): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}

/** Character where message `k` begins in `text` (its content's first characters), or undefined. */
export function messageStartChar(text: string, messages: readonly ChatMessage[], k: number): number | undefined {
  let cursor = 0;
  for (let i = 0; i <= k && i < messages.length; i++) {
    const c = flattenContent(messages[i].content);
    const probe = c.length > 0 ? c.slice(0, 64) : (messages[i].tool_calls?.[0]?.function?.name ?? '');
    if (!probe) continue;
    const at = text.indexOf(probe, cursor);
    if (at < 0) continue;
    if (i === k) return at;
    cursor = at + Math.max(1, Math.min(c.length, text.length - at));
  }
  return undefined;
}

/** Tokens emitted before character `at`: the last cut at or before it (a lower bound). */
function tokensBefore(cuts: TokenCuts, at: number): number {
  let lo = 0;
  let hi = cuts.chars.length - 1;
  let best = 0;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (cuts.chars[mid] <= at) {
      best = cuts.toks[mid];
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return best;
}

export function originalCachedTokens(o: OriginalLayoutInput): number {
  if (!o.prevHashes) return o.predicted;
  const k = leadingEqual(o.prevHashes, o.curHashes);
  if (k >= o.prevHashes.length) return o.predicted;
  const at = k === 0 ? 0 : messageStartChar(o.text, o.messages, k);
  if (at === undefined) return o.predicted;
  const before = tokensBefore(o.cuts, at);
  return Math.min(o.predicted, Math.floor(before / o.blockSize) * o.blockSize);
}
