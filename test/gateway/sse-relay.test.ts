// The SSE relay edits only what it must: when the client did not ask for usage, the usage field
// leaves a frame, and the frame's other lines (event:, id:, comments) travel unchanged.
import { describe, expect, it } from 'vitest';
import { SseRelay } from '../../gateway/proxy/sse.ts';

const chunk = (extra: Record<string, unknown>) =>
  JSON.stringify({
    id: 'c1',
    object: 'chat.completion.chunk',
    choices: [{ index: 0, delta: { content: 'hi' } }],
    ...extra,
  });

describe('SseRelay', () => {
  it('removes usage from a frame but keeps its id and event lines', () => {
    const r = new SseRelay(false);
    const out = r.push(
      `id: 7\nevent: message\ndata: ${chunk({ usage: { prompt_tokens: 5, completion_tokens: 1 } })}\n\n`,
    );
    expect(out).toBe(`id: 7\nevent: message\ndata: ${chunk({})}\n\n`);
  });

  it('drops the usage-only final chunk the client did not ask for, and keeps it when asked', () => {
    const usageOnly = `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', choices: [], usage: { prompt_tokens: 5, completion_tokens: 1 } })}\n\n`;
    expect(new SseRelay(false).push(usageOnly)).toBe('');
    expect(new SseRelay(true).push(usageOnly)).toBe(usageOnly);
  });
});
