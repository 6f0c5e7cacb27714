// Calls of a message list as compaction sees them: action numbers in the ledger's numbering,
// command labels, the assistant's text and the result message (tool or, for text-mode agents,
// the next user message); and the full text of a message including decoded tool arguments.
// O(messages).
import type { ChatMessage } from '../types.ts';
import { messageText } from '../ledger/message-text.ts';
import { textModeCommand } from '../ledger/semantics.ts';

export interface CallInfo {
  id: string;
  call: number;
  label: string;
  thought: string;
  result?: ChatMessage;
  assistantIndex: number;
}

/** Action numbers and labels of every call, in the ledger's numbering. */
export function scanCalls(input: ChatMessage[]): CallInfo[] {
  const calls: CallInfo[] = [];
  const byId = new Map<string, CallInfo>();
  const firstUser = input.findIndex((m) => m.role === 'user');
  let pendingText: CallInfo | undefined;
  let n = 0;
  input.forEach((m, i) => {
    if (m.role === 'assistant') {
      // Full text: the verbatim set is taken over all of it; the digest shows a bounded head.
      const thought = messageText(m).trim();
      if (m.tool_calls?.length) {
        for (const tc of m.tool_calls) {
          let label = tc.function?.name ?? '';
          try {
            const a = JSON.parse(tc.function?.arguments ?? '{}') as Record<string, unknown>;
            const c = a.command ?? a.cmd ?? a.input;
            label =
              typeof c === 'string' ? c : Array.isArray(c) ? c.map(String).join(' ') : `${label} ${JSON.stringify(a)}`;
          } catch {
            label = `${label} ${tc.function?.arguments ?? ''}`;
          }
          const info: CallInfo = { id: tc.id, call: ++n, label, thought, assistantIndex: i };
          calls.push(info);
          byId.set(tc.id, info);
        }
      } else {
        const cmd = textModeCommand(messageText(m));
        const info: CallInfo = {
          id: cmd ? `text-${n + 1}` : `say-${i}`,
          call: cmd ? ++n : n,
          label: cmd ?? '',
          thought,
          assistantIndex: i,
        };
        calls.push(info);
        pendingText = cmd ? info : undefined;
      }
    } else if (m.role === 'tool') {
      // SWE-agent writes `tool_call_ids` (a list) instead of `tool_call_id`.
      const ids = (m as { tool_call_ids?: unknown }).tool_call_ids;
      const info = byId.get(m.tool_call_id ?? (Array.isArray(ids) ? String(ids[0]) : ''));
      if (info) info.result = m;
    } else if (m.role === 'user' && i > firstUser && pendingText) {
      pendingText.result = m;
      pendingText = undefined;
    }
  });
  return calls;
}

export function fullText(m: ChatMessage): string {
  const calls = (m.tool_calls ?? []).map((t) => t.function?.arguments ?? '').join('\n');
  let args = calls;
  // Commands are JSON-escaped inside arguments; compare on their decoded form.
  try {
    args =
      (m.tool_calls ?? []).map((t) => JSON.stringify(JSON.parse(t.function?.arguments ?? '{}'))).join('\n') +
      '\n' +
      decodeArgs(m);
  } catch {
    /* keep raw */
  }
  return `${messageText(m)}\n${args}`;
}

function decodeArgs(m: ChatMessage): string {
  return (m.tool_calls ?? [])
    .map((t) => {
      const a = JSON.parse(t.function?.arguments ?? '{}') as Record<string, unknown>;
      return Object.values(a)
        .map((v) => (typeof v === 'string' ? v : JSON.stringify(v)))
        .join('\n');
    })
    .join('\n');
}
