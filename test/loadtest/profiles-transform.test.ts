import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ChatMessage } from '../../middleware/types.ts';
import type { Session } from '../../loadtest/formats/types.ts';
import { applyProfile } from '../../loadtest/profiles/index.ts';

function session(turns: number, toolOutLines = 3): Session {
  const msgs: ChatMessage[] = [
    { role: 'system', content: 'You are an agent.' },
    { role: 'user', content: 'Fix the bug. Do not modify tests.' },
  ];
  const tools = [
    {
      type: 'function',
      function: {
        name: 'bash',
        description: 'run',
        parameters: { type: 'object', properties: { command: { type: 'string' } } },
      },
    },
    {
      type: 'function',
      function: {
        name: 'read',
        description: 'read',
        parameters: { type: 'object', properties: { path: { type: 'string' } } },
      },
    },
    {
      type: 'function',
      function: {
        name: 'edit',
        description: 'edit',
        parameters: { type: 'object', properties: { path: { type: 'string' } } },
      },
    },
  ];
  const calls = [];
  for (let i = 0; i < turns; i++) {
    calls.push({ body: { model: 'm', messages: msgs.slice(), tools } });
    msgs.push({
      role: 'assistant',
      content: `step ${i}`,
      tool_calls: [{ id: `c${i}`, type: 'function', function: { name: 'bash', arguments: `{"command":"ls ${i}"}` } }],
    });
    msgs.push({
      role: 'tool',
      tool_call_id: `c${i}`,
      content: Array.from({ length: toolOutLines }, (_, k) => `out ${i}.${k}`).join('\n'),
    });
  }
  return { id: 's1', source: 'test', calls };
}

describe('profiles', () => {
  it('novel-elision trims old outputs in place with a marker the middleware never names', () => {
    const [p] = applyProfile([session(9, 6)], 'novel-elision', { seed: 1, lastN: 2 });
    const last = p.calls[8].body.messages;
    const tools = last.filter((m) => m.role === 'tool').map((m) => String(m.content));
    expect(tools.slice(-2).every((t) => t.startsWith('out '))).toBe(true);
    expect(tools.slice(0, -2).every((t) => t.endsWith('<<6 lines trimmed by harness>>'))).toBe(true);
    expect(tools.some((t) => t.split('\n').length === 4)).toBe(true); // a head kept above the marker
    const src = readdirSync('middleware', { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'));
    for (const f of src) expect(readFileSync(join('middleware', f), 'utf8')).not.toMatch(/trimmed by harness/);
  });

  it('append-only leaves calls untouched', () => {
    const s = session(4);
    expect(applyProfile([s], 'append-only', { seed: 1 })[0]).toEqual(s);
  });

  it('volatile-clock puts an advancing Current date line at the top of the system prompt', () => {
    const [p] = applyProfile([session(5)], 'volatile-clock', { seed: 1 });
    const firstLines = p.calls.map((c) => String(c.body.messages[0].content).split('\n')[0]);
    for (const l of firstLines) expect(l).toMatch(/^Current date: \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    const times = firstLines.map((l) => Date.parse(l.slice('Current date: '.length)));
    for (let i = 1; i < times.length; i++) expect(times[i]).toBeGreaterThan(times[i - 1]);
    expect(String(p.calls[0].body.messages[0].content)).toContain('You are an agent.');
    expect(applyProfile([session(5)], 'volatile-clock', { seed: 1 })).toEqual([p]);
    expect(applyProfile([session(5)], 'volatile-clock', { seed: 2 })).not.toEqual([p]);
  });

  it('last-n-elision replaces tool outputs older than the last N in place', () => {
    const [p] = applyProfile([session(9, 4)], 'last-n-elision', { seed: 1, lastN: 3 });
    const last = p.calls[8].body.messages; // 8 tool outputs before call 8
    const tools = last.filter((m) => m.role === 'tool');
    expect(tools).toHaveLength(8);
    expect(tools.slice(0, 5).every((m) => m.content === 'Old environment output: (4 lines omitted)')).toBe(true);
    expect(tools.slice(5).map((m) => m.content)).toEqual([
      'out 5.0\nout 5.1\nout 5.2\nout 5.3',
      'out 6.0\nout 6.1\nout 6.2\nout 6.3',
      'out 7.0\nout 7.1\nout 7.2\nout 7.3',
    ]);
    expect(tools.every((m) => m.tool_call_id)).toBe(true);
    expect(last.length).toBe(session(9).calls[8].body.messages.length);
    // early calls with fewer than N outputs are unchanged
    expect(p.calls[2].body).toEqual(session(9, 4).calls[2].body);
  });

  it('tool-shuffle changes tool and key order per call, same content, deterministic', () => {
    const s = session(6);
    const [p] = applyProfile([s], 'tool-shuffle', { seed: 7 });
    const names = p.calls.map((c) => c.body.tools!.map((t) => t.function.name).join(','));
    const keyOrders = p.calls.map((c) => JSON.stringify(c.body.tools));
    expect(new Set(keyOrders).size).toBeGreaterThan(1);
    for (let i = 0; i < p.calls.length; i++) {
      expect(names[i].split(',').sort()).toEqual(['bash', 'edit', 'read']);
      const canon = (v: unknown) =>
        JSON.stringify(v, (_k, x) =>
          x && typeof x === 'object' && !Array.isArray(x) ? Object.fromEntries(Object.entries(x).sort()) : x,
        );
      const sortT = (ts: unknown[]) => ts.map(canon).sort();
      expect(sortT(p.calls[i].body.tools!)).toEqual(sortT(s.calls[i].body.tools!));
      expect(p.calls[i].body.messages).toEqual(s.calls[i].body.messages);
    }
    expect(applyProfile([s], 'tool-shuffle', { seed: 7 })).toEqual([p]);
  });

  it('condense replaces the middle with one summary message, keeps first messages and a tail', () => {
    const s = session(40);
    const [p] = applyProfile([s], 'condense', { seed: 1, condenseMaxMessages: 20, condenseKeepFirst: 2 });
    for (const c of p.calls) {
      expect(c.body.messages.length).toBeLessThanOrEqual(21);
      expect(c.body.messages.slice(0, 2)).toEqual(s.calls[0].body.messages.slice(0, 2));
      // a tool result never loses its call
      const ids = new Set(c.body.messages.flatMap((m) => m.tool_calls?.map((t) => t.id) ?? []));
      for (const m of c.body.messages) if (m.role === 'tool') expect(ids.has(m.tool_call_id!)).toBe(true);
    }
    const last = p.calls[39].body.messages;
    expect(String(last[2].content)).toContain('<CONDENSATION>');
    const orig = s.calls[39].body.messages;
    expect(last[last.length - 1]).toEqual(orig[orig.length - 1]);
    // between condensations the summary is byte-stable, so consecutive calls share a prefix
    const summaries = new Set(
      p.calls.map((c) => String(c.body.messages[2]?.content)).filter((x) => x.includes('CONDENSATION')),
    );
    expect(summaries.size).toBeGreaterThan(1);
    expect(summaries.size).toBeLessThan(20);
  });
});
