// The original-layout counterfactual: the original prompt's cache ends where the first original
// message that changed since the previous call begins (at the last token cut before it), never
// beyond this layout's own prediction; with nothing changed, or no previous call here, it equals
// the prediction (the layout is credited nothing).
import { describe, expect, it } from 'vitest';
import { messageStartChar, originalCachedTokens } from '../../middleware/diagnostics/original-layout.ts';
import type { ChatMessage } from '../../middleware/types.ts';

const messages: ChatMessage[] = [
  { role: 'system', content: 'You are an agent.' },
  { role: 'user', content: 'first question' },
  { role: 'assistant', content: 'first answer' },
  { role: 'user', content: 'second question' },
];
// A chat-template-like render with a cut (and 100 tokens) after each role header.
const text = messages.map((m) => `<|im_start|>${m.role}\n${m.content}<|im_end|>\n`).join('');
const starts = messages.map((m) => text.indexOf(String(m.content)));
const cuts = { chars: starts.map((s) => s - 1), toks: starts.map((_, i) => i * 100 + 1) };
const base = { text, messages, cuts, blockSize: 16, predicted: 320 };

describe('originalCachedTokens', () => {
  it('finds where a message begins in the render', () => {
    expect(messageStartChar(text, messages, 2)).toBe(starts[2]);
    expect(messageStartChar(text, messages, 9)).toBeUndefined();
  });

  it('a change in the original system message leaves the original layout nothing cached', () => {
    expect(originalCachedTokens({ ...base, prevHashes: ['s0', 'u1', 'a1'], curHashes: ['s1', 'u1', 'a1', 'u2'] })).toBe(
      0,
    );
  });

  it('a change at message 2 caps the original cache at the tokens before it, in whole blocks', () => {
    // 201 tokens before message 2 -> 192 in 16-token blocks.
    expect(originalCachedTokens({ ...base, prevHashes: ['s', 'u1', 'aX'], curHashes: ['s', 'u1', 'a1', 'u2'] })).toBe(
      192,
    );
    // Never more than the layout itself predicts.
    expect(
      originalCachedTokens({
        ...base,
        predicted: 64,
        prevHashes: ['s', 'u1', 'aX'],
        curHashes: ['s', 'u1', 'a1', 'u2'],
      }),
    ).toBe(64);
  });

  it('an append-only original, or no previous call here, equals the prediction', () => {
    expect(originalCachedTokens({ ...base, prevHashes: ['s', 'u1', 'a1'], curHashes: ['s', 'u1', 'a1', 'u2'] })).toBe(
      320,
    );
    expect(originalCachedTokens({ ...base, curHashes: ['s', 'u1', 'a1', 'u2'] })).toBe(320);
  });
});
