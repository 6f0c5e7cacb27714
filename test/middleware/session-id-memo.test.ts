// identifySession memoises derived ids on the message objects it read (resent history keeps its
// identity): with the same objects in every arrangement a request can take (longer, shorter, a
// prefill, no assistant turn, the first user message after the first assistant one, other tools,
// tenant or model), each answer must equal the one computed afresh from copies.
import { describe, expect, it } from 'vitest';
import { identifySession } from '../../middleware/layout/session-id.ts';
import type { ChatMessage, ChatRequest, ToolDef } from '../../middleware/types.ts';

const tool = (name: string): ToolDef => ({ type: 'function', function: { name, parameters: { type: 'object' } } });

const sys: ChatMessage = { role: 'system', content: 'You are an agent. Today is 2026-01-02 10:00.\nBe brief.' };
const dev: ChatMessage = { role: 'developer', content: 'Use the tools.' };
const task: ChatMessage = { role: 'user', content: 'Fix the bug in src/a.py.' };
const more: ChatMessage = { role: 'user', content: 'Also the test.' };
const a1: ChatMessage = {
  role: 'assistant',
  content: '<think>hm</think>Reading.',
  tool_calls: [{ id: 'c1', type: 'function', function: { name: 'read', arguments: '{"p":"a","q":1}' } }],
};
const t1: ChatMessage = { role: 'tool', tool_call_id: 'c1', content: 'x = 1\n' };
const a2: ChatMessage = { role: 'assistant', content: 'Done.' };
const other: ChatMessage = { role: 'assistant', content: 'Something else.' };

const shapes: ChatMessage[][] = [
  [sys, task],
  [sys, dev, task],
  [sys, task, more],
  [sys, task, a1],
  [sys, task, a1, t1],
  [sys, task, a1, t1, a2],
  [sys, task, other, t1],
  [sys, a1, task],
  [sys, a1],
  [sys, dev, task, a1, t1],
  [sys],
  [task, a1, t1],
  [task],
];

const fresh = (body: ChatRequest, tenant: string) => identifySession(structuredClone(body), { tenant, headers: {} });

describe('identifySession memo', () => {
  it('gives what a fresh derivation gives, for the same objects in every arrangement, twice over', () => {
    let hits = 0;
    for (let round = 0; round < 2; round++)
      for (const tenant of ['t1', 't2'])
        for (const model of ['m1', 'm2'])
          for (const tools of [[tool('read'), tool('run')], [tool('run')], undefined])
            for (const messages of [...shapes, ...shapes.slice().reverse()]) {
              const body: ChatRequest = { model, messages: messages.slice(), ...(tools ? { tools } : {}) };
              const got = identifySession(body, { tenant, headers: {} });
              const want = fresh(body, tenant);
              expect(got, JSON.stringify({ tenant, model, tools: !!tools, n: messages.length })).toEqual(want);
              hits++;
            }
    expect(hits).toBeGreaterThan(200);
  });

  it('keeps explicit ids first and never memoises them into derived ones', () => {
    const body: ChatRequest = { model: 'm', messages: [sys, task, a1, t1] };
    const derived = identifySession(body, { tenant: 't', headers: {} });
    expect(identifySession(body, { tenant: 't', headers: { 'x-session-id': 'abc' } })).toEqual({
      id: 'abc',
      source: 'header',
    });
    expect(identifySession(body, { tenant: 't', headers: {} })).toEqual(derived);
  });

  it('a caller changing an identity it got back does not change later answers', () => {
    const body: ChatRequest = { model: 'm', messages: [sys, task, a1, t1] };
    const first = identifySession(body, { tenant: 't', headers: {} });
    const copy = { ...first };
    first.id = 'changed';
    expect(identifySession(body, { tenant: 't', headers: {} })).toEqual(copy);
  });
});
