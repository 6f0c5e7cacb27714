// Tool-call arguments are the request's JSON: keys named `__proto__` or `constructor` are data to
// the canonical tools stage. Before, its key trees were read through the prototype, so a session
// that had learned one nested key and then sent `{"__proto__": {...}}` in a call's arguments wrote
// the keys it learned onto Object.prototype (every object of the process, every tenant's, then had
// a `k`), and the `__proto__` member itself was dropped from the arguments sent upstream.
import { afterEach, describe, expect, it } from 'vitest';
import { applyFirstSeenOrder, type KeyTree } from '../../middleware/layout/first-seen-order.ts';
import { createPipeline } from '../../middleware/pipeline.ts';
import type { ChatMessage } from '../../middleware/types.ts';

const proto = Object.prototype as unknown as Record<string, unknown>;
const fn = Object as unknown as Record<string, unknown>;
afterEach(() => {
  delete proto.k;
  delete proto.c;
  delete fn.k;
});

const call = (id: string, args: string): ChatMessage => ({
  role: 'assistant',
  content: null,
  tool_calls: [{ id, type: 'function', function: { name: 'run', arguments: args } }],
});

describe('first-seen order: keys of the request stay data', () => {
  it('learns __proto__ and constructor as own keys and writes no prototype', () => {
    const tree: KeyTree = {};
    applyFirstSeenOrder(JSON.parse('{"cmd":"ls","opts":{"n":1}}'), tree);
    const v = JSON.parse('{"cmd":"ls","__proto__":{"polluted":1},"constructor":{"x":2}}');
    const out = applyFirstSeenOrder(v, tree);
    expect(JSON.stringify(out)).toBe(JSON.stringify(v));
    expect(Object.hasOwn(tree.c!, '__proto__')).toBe(true);
    expect(Object.hasOwn(tree.c!, 'constructor')).toBe(true);
    expect(proto.k).toBeUndefined();
    expect(fn.k).toBeUndefined();
    expect(({} as Record<string, unknown>).k).toBeUndefined();
  });

  it('sends such arguments on as the agent wrote them, through the pipeline', async () => {
    const p = createPipeline({ model: 'm', tokenizer: 'cl100k_base' });
    const base: ChatMessage[] = [
      { role: 'system', content: 'You run commands.' },
      { role: 'user', content: 'list the files' },
      call('c1', '{"cmd":"ls","opts":{"n":1}}'),
      { role: 'tool', tool_call_id: 'c1', content: 'a.py' },
    ];
    const ctx = { tenant: 't', requestId: 'r', headers: { 'x-session-id': 'own-keys' }, model: 'm' };
    await p.process({ model: 'm', messages: base }, ctx);
    const evil = '{"cmd":"ls","__proto__":{"polluted":1},"constructor":{"x":2}}';
    const messages = [...base, call('c2', evil), { role: 'tool', tool_call_id: 'c2', content: 'b.py' }];
    const r = await p.process({ model: 'm', messages }, ctx);
    const sent = r.body.messages.find((m) => m.tool_calls?.[0]?.id === 'c2');
    expect(sent?.tool_calls?.[0]?.function.arguments).toBe(evil);
    expect(proto.k).toBeUndefined();
    expect(fn.k).toBeUndefined();
  });
});
