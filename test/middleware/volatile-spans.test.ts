// Volatile relocation learns from what changes: the first call passes unchanged, a line seen
// changing leaves the root (a label line whole; an instruction line keeps its place with a
// placeholder where its changing values were), and the root is byte-stable from then on.
import { describe, expect, it } from 'vitest';
import { changingSpans, lineShape, valueRuns, withPlaceholders } from '../../middleware/layout/volatile-spans.ts';
import { VOLATILE_PLACEHOLDER } from '../../middleware/lossless/placeholder.ts';
import { createPipeline } from '../../middleware/pipeline.ts';
import type { ChatRequest } from '../../middleware/types.ts';

describe('volatile spans', () => {
  it('lines that differ only in values share a shape', () => {
    expect(lineShape('Step 1 of 3: run 7f3a9c21e0')).toBe(lineShape('Step 2 of 3: run 0b8e2c5d11'));
    expect(lineShape('Step 1 of 3')).not.toBe(lineShape('Stage 1 of 3'));
  });

  it('widens an observed changing run to the date or clock around it, byte for byte elsewhere', () => {
    const line = '  Plan around 2026-03-05T10:04:00Z,  step 4.';
    const runs = valueRuns(line);
    const minute = runs.findIndex((r) => line.slice(r.start, r.end) === '04' && r.start > 20);
    const spans = changingSpans(line, [runs[minute]]);
    expect(withPlaceholders(line, spans)).toBe(`  Plan around ${VOLATILE_PLACEHOLDER},  step 4.`);
    // A run outside any pattern is only itself.
    const last = changingSpans(line, [runs[runs.length - 1]]);
    expect(withPlaceholders(line, last)).toBe(`  Plan around 2026-03-05T10:04:00Z,  step ${VOLATILE_PLACEHOLDER}.`);
  });

  it('keeps such a session cached from its third call on, the instruction in place', async () => {
    const p = createPipeline({ model: 'm', tokenizer: 'qwen3', layout: 'ctxgate' });
    const ctx = (i: number) => ({ tenant: 't', requestId: `r${i}`, headers: { 'x-session-id': 's' }, model: 'm' });
    const causes: string[] = [];
    const bodies: ChatRequest[] = [];
    const reqs: ChatRequest[] = [];
    for (let i = 0; i < 4; i++) {
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
      reqs.push(structuredClone(req));
      const r = await p.process(req, ctx(i));
      causes.push(r.prefix?.break_cause ?? '?');
      bodies.push(r.body);
    }
    expect(causes).toEqual(['new_session', 'system_changed', 'none', 'none']);
    expect(JSON.stringify(bodies[0])).toBe(JSON.stringify(reqs[0]));
    for (const b of bodies.slice(1))
      expect(b.messages[0].content).toBe(`You are a helpful assistant. Time: ${VOLATILE_PLACEHOLDER}`);
    expect(JSON.stringify(bodies[3].messages.at(-1))).toContain('Time: 2024-01-01T10:03:00Z');
  });
});
