// Places the gateway notes of a call (relocated volatile lines, tombstones…) as ONE leaf note after
// the history: a trailing system message where the template renders one there (probed once per
// template: the note must come after the last message and before the generation prompt), otherwise
// appended to the last user/tool message. Returns the index up to which the messages are what the
// agent will resend next call (the note is this call's only).
import type { TokenizerHandle } from '../tokens/handle.ts';
import type { ChatMessage, ContentPart } from '../types.ts';

export const LEAF_NOTE_STAGE = 'leaf_note';
const probes = new WeakMap<TokenizerHandle, boolean>();

export function trailingSystemWorks(tok: TokenizerHandle): boolean {
  let ok = probes.get(tok);
  if (ok === undefined) {
    const base: ChatMessage[] = [
      { role: 'system', content: 'ctxgate-root' },
      { role: 'user', content: 'ctxgate-u1' },
      { role: 'assistant', content: 'ctxgate-a1' },
      { role: 'user', content: 'ctxgate-u2' },
    ];
    try {
      const without = tok.renderChat(base, { addGenerationPrompt: true });
      const withNote = tok.renderChat([...base, { role: 'system', content: 'ctxgate-note' }], {
        addGenerationPrompt: true,
      });
      const noGen = tok.renderChat(base, { addGenerationPrompt: false });
      const suffix = without.startsWith(noGen) ? without.slice(noGen.length) : undefined;
      const at = withNote.indexOf('ctxgate-note');
      ok =
        suffix !== undefined &&
        withNote.startsWith(noGen) &&
        at > withNote.indexOf('ctxgate-u2') &&
        withNote.endsWith(suffix) &&
        at < withNote.length - suffix.length;
    } catch {
      ok = false;
    }
    probes.set(tok, ok);
  }
  return ok;
}

export function placeLeafNote(
  tok: TokenizerHandle,
  messages: ChatMessage[],
  note: string,
): { messages: ChatMessage[]; stableEnd: number; target: string } {
  // A final assistant message is a prefill the model continues (continue_final_message): it must stay last.
  const prefill = messages[messages.length - 1]?.role === 'assistant';
  if (!prefill && trailingSystemWorks(tok))
    return {
      messages: [...messages, { role: 'system', content: note }],
      stableEnd: messages.length,
      target: 'trailing system message',
    };
  let i = messages.length - 1;
  while (i >= 0 && messages[i].role !== 'user' && messages[i].role !== 'tool') i--;
  if (i < 0) {
    const at = prefill ? messages.length - 1 : messages.length;
    return {
      messages: [...messages.slice(0, at), { role: 'user', content: note }, ...messages.slice(at)],
      stableEnd: at,
      target: 'user message before the leaf',
    };
  }
  const m = messages[i];
  const content: ChatMessage['content'] = Array.isArray(m.content)
    ? [...(m.content as ContentPart[]), { type: 'text', text: '\n\n' + note }]
    : (m.content ?? '') + '\n\n' + note;
  const out = messages.slice();
  out[i] = { ...m, content };
  return { messages: out, stableEnd: i, target: `messages[${i}] (${m.role})` };
}
