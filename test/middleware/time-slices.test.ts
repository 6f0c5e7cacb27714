// A big request yields the event loop between its O(prompt) sections (middleware/perf/time-slices.ts),
// so other callbacks run while it is processed; a small one never yields. Counted in macrotask
// turns (a setImmediate ticker), an ordering claim: no timing is measured.
import { describe, expect, it } from 'vitest';
import { createPipeline } from '../../middleware/pipeline.ts';
import { DEFAULT_SLICE_MIN_CHARS, promptChars } from '../../middleware/perf/time-slices.ts';
import type { ChatMessage } from '../../middleware/types.ts';
import { turnsDuring } from '../helpers/event-loop-turns.ts';

function text(n: number, seed: number): string {
  const words = ['def ', 'return x', ' = 1;\n', 'src/app.py:12 ', '{"k": [1, 2]} ', 'naïve ', '\t\tif ok:\n'];
  let s = '';
  for (let i = seed; s.length < n; i = (i * 31 + 7) % 9973) s += words[i % words.length];
  return s;
}

describe('time slices', () => {
  it('counts the characters of every message part', () => {
    const m: ChatMessage[] = [
      { role: 'user', content: 'abc' },
      { role: 'user', content: [{ type: 'text', text: 'de' }] },
      {
        role: 'assistant',
        content: null,
        reasoning_content: 'f',
        tool_calls: [{ id: 'c', type: 'function', function: { name: 'x', arguments: '{}' } }],
      },
    ];
    expect(promptChars(m)).toBe(8);
  });

  it('a big request lets the event loop turn between its sections; a small one does not', async () => {
    const p = createPipeline({ model: 'm', tokenizer: 'qwen3', layout: 'ctxgate' });
    const ctx = (id: string) => ({ tenant: 't', requestId: id, model: 'm', headers: { 'x-session-id': id } });
    // Loads the tokenizer (its I/O would count as turns).
    await p.process({ model: 'm', messages: [{ role: 'user', content: 'warm up' }] }, ctx('w'));
    const small = await turnsDuring(() =>
      p.process({ model: 'm', messages: [{ role: 'user', content: 'a small question' }] }, ctx('s')),
    );
    expect(small).toBe(0);
    const big = await turnsDuring(() =>
      p.process(
        {
          model: 'm',
          messages: [
            { role: 'system', content: 'You are a coding agent.' },
            { role: 'user', content: text(DEFAULT_SLICE_MIN_CHARS + 1000, 3) },
          ],
        },
        ctx('b'),
      ),
    );
    // escape, session, message hashes, each stage, render, diagnose: at least five turns.
    expect(big).toBeGreaterThanOrEqual(5);
  }, 60_000);
});
