// last-n-elision: SWE-agent's LastNObservations history processor. Tool outputs older than the
// last N are replaced in place by `Old environment output: (K lines omitted)`, so the message at
// each position changes when it falls out of the window: the prefix breaks there every call.
// Observations are `tool` messages, or (no tool messages) `user` messages after the task.
import type { ChatMessage } from '../../middleware/types.ts';
import { cloneJson, type Profile } from './types.ts';

export const DEFAULT_LAST_N = 5;

export function elidedText(lines: number): string {
  return `Old environment output: (${lines} lines omitted)`;
}

export function messageTextOf(m: ChatMessage): string {
  if (typeof m.content === 'string') return m.content;
  if (Array.isArray(m.content)) return m.content.map((p) => p.text ?? '').join('');
  return '';
}

export function observationIndexes(messages: ChatMessage[]): number[] {
  const tool = messages.flatMap((m, i) => (m.role === 'tool' ? [i] : []));
  if (tool.length) return tool;
  const firstUser = messages.findIndex((m) => m.role === 'user');
  return messages.flatMap((m, i) => (m.role === 'user' && i > firstUser ? [i] : []));
}

export function elideMessages(messages: ChatMessage[], n: number): ChatMessage[] {
  const obs = observationIndexes(messages);
  const old = obs.slice(0, Math.max(0, obs.length - n));
  if (!old.length) return messages;
  const out = messages.slice();
  for (const i of old) out[i] = { ...out[i], content: elidedText(messageTextOf(out[i]).split('\n').length) };
  return out;
}

export const lastNElision: Profile = {
  name: 'last-n-elision',
  describe:
    'SWE-agent LastNObservations: tool outputs older than the last N (--last-n, default 5) replaced in place by "Old environment output: (K lines omitted)"',
  apply(session, opts) {
    const n = opts.lastN ?? DEFAULT_LAST_N;
    const calls = session.calls.map((c) => {
      const body = cloneJson(c.body);
      body.messages = elideMessages(body.messages, n);
      return { ...c, body };
    });
    return { ...session, calls };
  },
};
