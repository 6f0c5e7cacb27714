// Volatile relocation moves a label line whole, but only the volatile spans of an instruction line:
// the instruction stays in the root, where the agent put it.
import { describe, expect, it } from 'vitest';
import { findVolatileLines, stripVolatile } from '../../middleware/layout/volatile-spans.ts';
import { createPipeline } from '../../middleware/pipeline.ts';
import type { ChatRequest } from '../../middleware/types.ts';

const strip = (text: string) => {
  const lines = text.split('\n');
  const found = findVolatileLines(lines, undefined, new Set());
  return { root: stripVolatile(lines, found), moved: found.map((f) => f.text) };
};

describe('volatile spans', () => {
  it('moves a clock label line whole', () => {
    expect(strip('Current date: 2026-11-30T03:10:00Z\nYou are a careful agent.')).toEqual({
      root: 'You are a careful agent.',
      moved: ['Current date: 2026-11-30T03:10:00Z'],
    });
  });

  it('keeps the instruction of a line and moves only its timestamp', () => {
    const r = strip('You are a helpful assistant. Time: 2024-01-01T10:00:00Z');
    expect(r.root).toBe('You are a helpful assistant. Time:');
    expect(r.moved).toEqual(['You are a helpful assistant. Time: 2024-01-01T10:00:00Z']);
  });

  it('moves a line whole when digits would stay behind', () => {
    const r = strip('You are agent 7 of the fleet, started 2024-01-01T10:00:00Z');
    expect(r.root).toBe('');
    expect(r.moved).toHaveLength(1);
  });

  it('keeps such a session cached call after call through the pipeline', async () => {
    const p = createPipeline({ model: 'm', tokenizer: 'qwen3', layout: 'ctxgate' });
    const ctx = (i: number) => ({ tenant: 't', requestId: `r${i}`, headers: { 'x-session-id': 's' }, model: 'm' });
    const causes: string[] = [];
    const bodies: ChatRequest[] = [];
    for (let i = 0; i < 3; i++) {
      const req: ChatRequest = {
        model: 'm',
        messages: [
          { role: 'system', content: `You are a helpful assistant. Time: 2024-01-01T10:0${i}:00Z` },
          { role: 'user', content: 'Fix the bug in src/app.py' },
          ...Array.from({ length: i }, (_, k) => [
            { role: 'assistant', content: `step ${k}` },
            { role: 'user', content: `output ${k}` },
          ]).flat(),
        ],
      };
      const r = await p.process(req, ctx(i));
      causes.push(r.prefix?.break_cause ?? '?');
      bodies.push(r.body);
    }
    expect(causes.slice(1)).toEqual(['none', 'none']);
    for (const b of bodies) expect(b.messages[0].content).toBe('You are a helpful assistant. Time:');
    expect(JSON.stringify(bodies[2].messages.at(-1))).toContain('Time: 2024-01-01T10:02:00Z');
  });
});
