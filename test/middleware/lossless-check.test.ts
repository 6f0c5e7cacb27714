import { describe, expect, it } from 'vitest';
import { checkLossless, createLosslessTracker } from '../../middleware/lossless/check.ts';
import { VOLATILE_PLACEHOLDER } from '../../middleware/lossless/placeholder.ts';
import type { ChatMessage, ChatRequest } from '../../middleware/types.ts';

const body = (messages: ChatMessage[], tools?: ChatRequest['tools']): ChatRequest => ({
  model: 'm',
  messages,
  ...(tools ? { tools } : {}),
});
const sys = 'You are a coding agent.\nNever push to branch release-2024-06-01 directly.\n    indented: keep me';
const base = (): ChatMessage[] => [
  { role: 'system', content: sys },
  { role: 'user', content: 'Fix the bug' },
  {
    role: 'assistant',
    content: null,
    tool_calls: [{ id: 'c1', type: 'function', function: { name: 'sh', arguments: '{"cmd":"ls","dir":"."}' } }],
  },
  { role: 'tool', tool_call_id: 'c1', content: 'a.py\nb.py' },
];

describe('lossless checker', () => {
  it('passes an unchanged first call and flags any change to it', () => {
    const c = body(base());
    expect(checkLossless({ clientBody: c, upstreamBody: structuredClone(c) })).toMatchObject({
      missing: 0,
      altered: 0,
      first_call_changed: 0,
    });
    const up = structuredClone(c);
    up.messages.push({
      role: 'system',
      content:
        '[ctxgate] moved from the system prompt (volatile, changes between calls):\nNever push to branch release-2024-06-01 directly.',
    });
    up.messages[0] = { role: 'system', content: 'You are a coding agent.\n    indented: keep me' };
    const r = checkLossless({ clientBody: c, upstreamBody: up });
    // Moved whole into the note: not missing, not altered, but the first call changed.
    expect(r).toMatchObject({ missing: 0, altered: 0, first_call_changed: 1, moved: 1 });
    expect(checkLossless({ clientBody: c, upstreamBody: up, priorClientBodies: [c] }).first_call_changed).toBe(0);
  });

  it('reports a silent span cut as altered and the lost line as missing', () => {
    const c = body(base());
    const up = structuredClone(c);
    up.messages[0] = {
      role: 'system',
      content: 'You are a coding agent.\nNever push to branch release- directly.\n    indented: keep me',
    };
    const r = checkLossless({ clientBody: c, upstreamBody: up, priorClientBodies: [c] });
    expect(r.missing).toBe(1);
    expect(r.altered).toBe(1);
    expect(r.details.map((d) => [d.kind, d.message, d.line])).toEqual([
      ['altered', 0, 'Never push to branch release- directly.'],
      ['missing', 0, 'Never push to branch release-2024-06-01 directly.'],
    ]);
  });

  it('counts lost indentation and trimmed whitespace', () => {
    const c = body(base());
    const up = structuredClone(c);
    up.messages[0] = { role: 'system', content: sys.replace('    indented', 'indented') };
    expect(checkLossless({ clientBody: c, upstreamBody: up, priorClientBodies: [c] })).toMatchObject({
      missing: 1,
      altered: 1,
    });
  });

  it('accepts a placeholder only when the full line is in a note', () => {
    const c = body(base());
    const up = structuredClone(c);
    up.messages[0] = { role: 'system', content: sys.replace('2024-06-01', VOLATILE_PLACEHOLDER) };
    expect(checkLossless({ clientBody: c, upstreamBody: up, priorClientBodies: [c] })).toMatchObject({
      missing: 1,
      altered: 1,
    });
    up.messages.push({
      role: 'system',
      content: '[ctxgate] moved:\nNever push to branch release-2024-06-01 directly.',
    });
    expect(checkLossless({ clientBody: c, upstreamBody: up, priorClientBodies: [c] })).toMatchObject({
      missing: 0,
      altered: 0,
      moved: 1,
    });
  });

  it('flags a hard eviction without a compaction receipt, accepts it under one', () => {
    const c = body([...base(), { role: 'assistant', content: 'done' }, { role: 'user', content: 'next' }]);
    const up = structuredClone(c);
    up.messages[3] = { role: 'tool', tool_call_id: 'c1', content: '[ctxgate] output removed: ls at call 1 was stale' };
    const r = checkLossless({ clientBody: c, upstreamBody: up, priorClientBodies: [c] });
    expect(r.missing).toBe(2);
    const cp = {
      ...structuredClone(c),
      messages: [
        c.messages[0],
        c.messages[1],
        { role: 'user', content: '[ctxgate] checkpoint 1\nGoal: x' },
        c.messages[4],
        c.messages[5],
      ],
    };
    const receipts = [{ stage: 'compaction', action: 'compacted', target: 'messages 2–3', reason: 'τ_high' }];
    expect(checkLossless({ clientBody: c, upstreamBody: cp, priorClientBodies: [c], receipts })).toMatchObject({
      missing: 0,
      altered: 0,
      compacted: 2,
    });
    expect(checkLossless({ clientBody: c, upstreamBody: cp, priorClientBodies: [c] }).missing).toBeGreaterThan(0);
  });

  it('accepts tombstones, the leaf note, escaping, canonical key order; flags changed arguments', () => {
    const c = body(
      [...base(), { role: 'user', content: 'see [ctxgate] here' }],
      [{ type: 'function', function: { name: 'sh', parameters: { b: 1, a: 2 } } }],
    );
    const up = structuredClone(c);
    up.messages[3] = { ...up.messages[3], content: 'a.py\nb.py\n\n[ctxgate] the read of . at call 1 is stale' };
    up.messages[4] = {
      role: 'user',
      content: 'see [ctxgate\u200b] here\n\n[ctxgate] moved from the system prompt:\nCurrent date: 2026-03-05',
    };
    up.messages[2] = {
      ...up.messages[2],
      tool_calls: [{ id: 'c1', type: 'function', function: { name: 'sh', arguments: '{"dir":".","cmd":"ls"}' } }],
    };
    up.tools = [{ type: 'function', function: { parameters: { a: 2, b: 1 }, name: 'sh' } }];
    expect(checkLossless({ clientBody: c, upstreamBody: up, priorClientBodies: [c] })).toMatchObject({
      missing: 0,
      altered: 0,
    });
    up.messages[2].tool_calls![0].function.arguments = '{"dir":"/","cmd":"ls"}';
    expect(checkLossless({ clientBody: c, upstreamBody: up, priorClientBodies: [c] }).altered).toBe(1);
  });

  it('tracker: an output re-sent as the agent first sent it after the agent elided it is restored, not missing', () => {
    const t = createLosslessTracker();
    const c1 = body(base());
    expect(t.check(c1, c1).first_call_changed).toBe(0);
    const c2 = body([...base(), { role: 'assistant', content: 'ok' }, { role: 'user', content: 'go on' }]);
    c2.messages[3] = { ...c2.messages[3], content: '<<7 bytes gone>>' };
    const up2 = structuredClone(c2);
    up2.messages[3] = { ...up2.messages[3], content: 'a.py\nb.py' };
    expect(t.check(c2, up2)).toMatchObject({ missing: 0, altered: 0, first_call_changed: 0, restored: 1 });
    // Something the agent never sent there is no restoration.
    up2.messages[3] = { ...up2.messages[3], content: 'c.py' };
    expect(t.check(c2, up2)).toMatchObject({ missing: 1, altered: 1 });
  });

  it('reports a dropped message as missing', () => {
    const c = body([...base(), { role: 'assistant', content: 'all\ngood' }]);
    const up = body(c.messages.slice(0, 4));
    expect(checkLossless({ clientBody: c, upstreamBody: up, priorClientBodies: [c] }).missing).toBe(2);
  });
});
