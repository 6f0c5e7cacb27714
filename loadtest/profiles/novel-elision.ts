// novel-elision: an agent harness ctxgate was never taught about. Like SWE-agent's
// LastNObservations, observations older than the last N are replaced in place, but with a marker
// of its own (`<<K lines trimmed by harness>>`), and every other one keeps its first 3 lines
// above the marker (head truncation). Nothing in ctxgate special-cases this marker: the profile
// exists to show that elision is recognised by what changed in place, not by its wording.
import { DEFAULT_LAST_N, messageTextOf, observationIndexes } from './last-n-elision.ts';
import { cloneJson, type Profile } from './types.ts';
import type { ChatMessage } from '../../middleware/types.ts';

export const HEAD_LINES = 3;

export function trimmedText(text: string, position: number): string {
  const lines = text.split('\n');
  const marker = `<<${lines.length} lines trimmed by harness>>`;
  // Odd positions keep a head: a truncation, not only a replacement.
  return position % 2 === 1 && lines.length > HEAD_LINES + 1
    ? [...lines.slice(0, HEAD_LINES), marker].join('\n')
    : marker;
}

export function trimMessages(messages: ChatMessage[], n: number): ChatMessage[] {
  const obs = observationIndexes(messages);
  const old = obs.slice(0, Math.max(0, obs.length - n));
  if (!old.length) return messages;
  const out = messages.slice();
  for (const i of old) out[i] = { ...out[i], content: trimmedText(messageTextOf(out[i]), i) };
  return out;
}

export const novelElision: Profile = {
  name: 'novel-elision',
  describe:
    'a harness with its own marker: observations older than the last N (--last-n, default 5) become "<<K lines trimmed by harness>>" (every other one keeps its first 3 lines)',
  apply(session, opts) {
    const n = opts.lastN ?? DEFAULT_LAST_N;
    return {
      ...session,
      calls: session.calls.map((c) => ({
        ...c,
        body: { ...cloneJson(c.body), messages: trimMessages(cloneJson(c.body.messages), n) },
      })),
    };
  },
};
