// Where the leaf note goes: after the history, but never after an assistant prefill that the
// model is meant to continue (vLLM continue_final_message).
import { describe, expect, it } from 'vitest';
import { placeLeafNote, trailingSystemWorks } from '../../middleware/layout/leaf-note.ts';
import { loadTokenizer } from '../../middleware/tokens/registry.ts';
import type { ChatMessage } from '../../middleware/types.ts';

const NOTE = '[ctxgate] moved from the system prompt: Current date: 2026-11-30T03:10:00Z';

describe('placeLeafNote', () => {
  it('qwen3: a trailing system message after a user turn', async () => {
    const tok = await loadTokenizer('qwen3');
    expect(trailingSystemWorks(tok)).toBe(true);
    const msgs: ChatMessage[] = [
      { role: 'system', content: 'root' },
      { role: 'user', content: 'hi' },
    ];
    const placed = placeLeafNote(tok, msgs, NOTE);
    expect(placed.messages.at(-1)).toEqual({ role: 'system', content: NOTE });
  });

  it('keeps an assistant prefill last and attaches the note to the turn before it', async () => {
    const tok = await loadTokenizer('qwen3');
    const msgs: ChatMessage[] = [
      { role: 'system', content: 'root' },
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: 'partial' },
    ];
    const placed = placeLeafNote(tok, msgs, NOTE);
    expect(placed.messages.map((m) => m.role)).toEqual(['system', 'user', 'assistant']);
    expect(placed.messages[2]).toEqual(msgs[2]);
    expect(placed.messages[1].content).toBe(`hi\n\n${NOTE}`);
  });

  it('with only a prefill after the root, inserts a user note before it', async () => {
    const tok = await loadTokenizer('qwen3');
    const msgs: ChatMessage[] = [
      { role: 'system', content: 'root' },
      { role: 'assistant', content: 'partial' },
    ];
    const placed = placeLeafNote(tok, msgs, NOTE);
    expect(placed.messages.map((m) => m.role)).toEqual(['system', 'user', 'assistant']);
    expect(placed.messages[1].content).toBe(NOTE);
  });
});
