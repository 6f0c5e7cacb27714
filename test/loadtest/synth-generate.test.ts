import { describe, expect, it } from 'vitest';
import { generateSessions } from '../../loadtest/synth/index.ts';

describe('synthetic agent sessions', () => {
  const sessions = generateSessions({ count: 8, seed: 7 });

  it('is deterministic for a seed and differs across seeds', () => {
    expect(generateSessions({ count: 8, seed: 7 })).toEqual(sessions);
    expect(JSON.stringify(generateSessions({ count: 2, seed: 8 }))).not.toEqual(JSON.stringify(sessions.slice(0, 2)));
  });

  it('has 20–60 calls, a system prompt, tools and a task with explicit constraints', () => {
    for (const s of sessions) {
      expect(s.calls.length).toBeGreaterThanOrEqual(20);
      expect(s.calls.length).toBeLessThanOrEqual(60);
      const first = s.calls[0].body;
      expect(first.tools?.map((t) => t.function.name)).toEqual(['bash', 'read_file', 'edit_file', 'grep', 'run_tests']);
      expect(String(first.messages[0].content)).toMatch(/autonomous software engineering agent/);
      const task = String(first.messages.find((m) => m.role === 'user')?.content);
      expect(task).toMatch(/^- (Do not|You must) /m);
    }
  });

  it('mixes reads, edits, test logs with ANSI codes and progress bars, diffs, greps; tool ids pair up', () => {
    const s = sessions[0];
    const last = s.calls[s.calls.length - 1].body.messages;
    const text = last.map((m) => String(m.content)).join('\n');
    expect(text).toContain('\u001b[');
    expect(text).toMatch(/\[#+-*\]\s+\d+%/);
    expect(text).toMatch(/^diff --git /m);
    expect(text).toMatch(/^@@ -\d+,\d+ \+\d+,\d+ @@/m);
    expect(text).toMatch(/\[(arg-type|return-value|union-attr|attr-defined|assignment|call-arg)\]/);
    const tools = new Set(last.flatMap((m) => m.tool_calls?.map((t) => t.function.name) ?? []));
    for (const t of ['bash', 'read_file', 'edit_file', 'grep', 'run_tests']) expect(tools.has(t)).toBe(true);
    const ids = last.flatMap((m) => m.tool_calls?.map((t) => t.id) ?? []);
    expect(last.filter((m) => m.role === 'tool').map((m) => m.tool_call_id)).toEqual(ids);
  });

  it('plain sessions are append-only; some carry a volatile clock or elision', () => {
    const plain = sessions.find((s) => s.source === 'synth:7')!;
    for (let k = 1; k < plain.calls.length; k++) {
      const prev = plain.calls[k - 1].body.messages;
      expect(plain.calls[k].body.messages.slice(0, prev.length)).toEqual(prev);
    }
    expect(
      sessions.some(
        (s) =>
          s.source.endsWith('volatile-clock') &&
          String(s.calls[0].body.messages[0].content).startsWith('Current date: '),
      ),
    ).toBe(true);
    const el = sessions.find((s) => s.source.endsWith('last-n-elision'))!;
    expect(JSON.stringify(el.calls[el.calls.length - 1].body)).toContain('Old environment output: (');
  });
});
