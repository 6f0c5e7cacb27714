// Cache-break diagnostics (layout step 6): compares this call's prompt with the session's previous
// one and says how much of it the worker's prefix cache should serve and, when the prefix broke,
// where (token and message index) and why. The token comparison needs the previous ids (kept by
// this process); the cause comes from message-level hashes kept in session state, so it survives a
// replica change. O(prompt tokens) for the common-prefix scan; decoding only when a break happened.
import type { BreakCause, ChatMessage, PrefixDiagnostics } from '../types.ts';
import { flattenContent } from '../tokens/template-input.ts';

/** Compact form of a call kept in session state for the next call's comparison. */
export interface CallFingerprint {
  systemHash: string;
  toolsHash: string;
  /** Hashes of the messages the next call should resend unchanged (gateway note excluded). */
  stableHashes: string[];
  promptTokens: number;
}

export interface BreakInput {
  prev?: CallFingerprint;
  prevIds?: ArrayLike<number>;
  /** Leading ids known equal in prevIds and ids (copied from the previous call); the scan starts there. */
  commonFloor?: number;
  cur: CallFingerprint;
  ids: ArrayLike<number>;
  blockSize: number;
  /** Maps a token index to the index of the message rendered there (called only on breaks). */
  messageAtToken(tokenIndex: number): number | undefined;
}

export function commonPrefix(a: ArrayLike<number>, b: ArrayLike<number>, from = 0): number {
  const n = Math.min(a.length, b.length);
  let i = Math.min(from, n);
  while (i < n && a[i] === b[i]) i++;
  return i;
}

/** Engines cache full blocks only and always recompute the last prompt token. */
export function cacheableTokens(lcp: number, promptTokens: number, blockSize: number): number {
  const usable = Math.min(lcp, Math.max(0, promptTokens - 1));
  return Math.floor(usable / blockSize) * blockSize;
}

function messageCause(prev: CallFingerprint, cur: CallFingerprint): { cause: BreakCause; index?: number } | undefined {
  if (prev.systemHash !== cur.systemHash) return { cause: 'system_changed', index: 0 };
  if (prev.toolsHash !== cur.toolsHash) return { cause: 'tools_changed' };
  const n = Math.min(prev.stableHashes.length, cur.stableHashes.length);
  for (let i = 0; i < n; i++)
    if (prev.stableHashes[i] !== cur.stableHashes[i]) return { cause: 'history_edited', index: i };
  if (cur.stableHashes.length < prev.stableHashes.length) return { cause: 'truncated', index: cur.stableHashes.length };
  return undefined;
}

export function diagnose(input: BreakInput): PrefixDiagnostics {
  const { prev, prevIds, cur, ids, blockSize } = input;
  const promptTokens = ids.length;
  if (!prev)
    return {
      predicted_cached_tokens: 0,
      prompt_tokens: promptTokens,
      break_cause: 'new_session',
      break_token_index: 0,
    };
  const byMessage = messageCause(prev, cur);
  if (!prevIds) {
    // Another replica served the previous call: causes only, no token positions.
    if (!byMessage)
      return {
        predicted_cached_tokens: cacheableTokens(prev.promptTokens, promptTokens, blockSize),
        prompt_tokens: promptTokens,
        break_cause: 'none',
      };
    return {
      predicted_cached_tokens: 0,
      prompt_tokens: promptTokens,
      break_cause: byMessage.cause,
      break_message_index: byMessage.index,
    };
  }
  const lcp = commonPrefix(prevIds, ids, input.commonFloor ?? 0);
  const predicted = cacheableTokens(lcp, promptTokens, blockSize);
  // The previous prompt's stable part fully reused: whatever follows is new, not a break.
  if (lcp >= prev.promptTokens || (!byMessage && lcp >= Math.min(prevIds.length, ids.length))) {
    return { predicted_cached_tokens: predicted, prompt_tokens: promptTokens, break_cause: 'none' };
  }
  const located = input.messageAtToken(lcp);
  if (byMessage) {
    return {
      predicted_cached_tokens: predicted,
      prompt_tokens: promptTokens,
      break_cause: byMessage.cause,
      break_token_index: lcp,
      break_message_index: byMessage.index ?? located,
    };
  }
  // Same messages, different tokens before the end of the old prompt: the template re-rendered.
  return {
    predicted_cached_tokens: predicted,
    prompt_tokens: promptTokens,
    break_cause: 'template_rerender',
    break_token_index: lcp,
    break_message_index: located,
  };
}

/** Index of the message whose rendering contains character `offset` of the rendered prompt. */
export function messageAtChar(text: string, messages: readonly ChatMessage[], offset: number): number | undefined {
  let cursor = 0;
  let found: number | undefined;
  for (let i = 0; i < messages.length; i++) {
    const c = flattenContent(messages[i].content);
    const probe = c.length > 0 ? c.slice(0, 64) : (messages[i].tool_calls?.[0]?.function?.name ?? '');
    if (!probe) continue;
    const at = text.indexOf(probe, cursor);
    if (at < 0) continue;
    // Text between one message's content and the next one's (role header, reasoning block)
    // belongs to the next message.
    if (at > offset) return offset < cursor ? (found ?? i) : i;
    found = i;
    cursor = at + Math.max(1, Math.min(c.length, text.length - at));
  }
  return found;
}
