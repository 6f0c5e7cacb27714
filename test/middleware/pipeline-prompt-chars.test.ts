// The big-request check (perf/time-slices.ts) counts a call's message characters from the previous
// call's count when the call resends all of that call's messages (pipeline.ts resentChars): the
// count must be the whole prompt's either way. Observed through the yields a big request makes
// (macrotask turns of a setImmediate ticker: an ordering claim, no timing measured).
import { describe, expect, it } from 'vitest';
import { createPipeline } from '../../middleware/pipeline.ts';
import { DEFAULT_SLICE_MIN_CHARS, promptChars } from '../../middleware/perf/time-slices.ts';
import type { ChatMessage } from '../../middleware/types.ts';
import { turnsDuring } from '../helpers/event-loop-turns.ts';

function text(n: number, seed: number): string {
  const words = ['def ', 'return x', ' = 1;\n', 'src/app.py:12 ', '{"k": [1, 2]} ', 'naïve ', '\t\tif ok:\n'];
  let s = '';
  for (let i = seed; s.length < n; i = (i * 31 + 7) % 9973) s += words[i % words.length];
  return s.slice(0, n);
}

describe('pipeline: the big-request count carried from the previous call', () => {
  it('a resent history counts with its new messages; an edited one is counted afresh', async () => {
    const p = createPipeline({ model: 'm', tokenizer: 'qwen3', layout: 'ctxgate' });
    const ctx = { tenant: 't', requestId: 'r', model: 'm', headers: { 'x-session-id': 'grow' } };
    const call = async (messages: ChatMessage[]) => {
      let stored: Promise<void> | undefined;
      const turns = await turnsDuring(async () => {
        stored = (await p.process({ model: 'm', messages: structuredClone(messages) }, ctx)).stored;
      });
      await stored;
      return turns;
    };
    await p.process({ model: 'm', messages: [{ role: 'user', content: 'warm up' }] }, { ...ctx, headers: {} });
    const half = Math.floor(DEFAULT_SLICE_MIN_CHARS * 0.6);
    const first: ChatMessage[] = [
      { role: 'system', content: 'You are a coding agent.' },
      { role: 'user', content: text(half, 3) },
    ];
    expect(await call(first)).toBe(0);
    // Only its new messages are below the threshold: the whole prompt is above it.
    const second: ChatMessage[] = [
      ...first,
      { role: 'assistant', content: 'ok' },
      { role: 'user', content: text(half, 5) },
    ];
    expect(promptChars(second.slice(2))).toBeLessThan(DEFAULT_SLICE_MIN_CHARS);
    expect(promptChars(second)).toBeGreaterThanOrEqual(DEFAULT_SLICE_MIN_CHARS);
    expect(await call(second)).toBeGreaterThanOrEqual(5);
    // As many messages, its first user message edited: no longer big (the previous call's count
    // must not be carried over a message it did not have).
    const third: ChatMessage[] = [
      first[0],
      { role: 'user', content: text(half, 4) },
      { role: 'assistant', content: 'ok' },
      { role: 'user', content: 'go on' },
    ];
    expect(promptChars(third)).toBeLessThan(DEFAULT_SLICE_MIN_CHARS);
    expect(await call(third)).toBe(0);
    // Resent again with more: big again, from the third call's count.
    const fourth: ChatMessage[] = [...third, { role: 'user', content: text(half, 6) }];
    expect(await call(fourth)).toBeGreaterThanOrEqual(5);
  }, 60_000);
});
