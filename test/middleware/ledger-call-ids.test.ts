// Tool call ids are the agent's text: ids that name Object.prototype's members (`constructor`,
// `toString`, `__proto__`) are ids like any other in the ledger's open calls (types.ts openCalls).
// Before, a result whose id was one of them, with no call for it, threw in the ledger (it found
// Object.prototype.constructor as an open call), and a `__proto__` call was kept as the record's
// prototype instead of a key.
import { describe, expect, it } from 'vitest';
import { applyLedger } from '../../middleware/ledger/ledger.ts';
import { emptyLedger, type LedgerState } from '../../middleware/ledger/types.ts';
import type { ChatMessage } from '../../middleware/types.ts';

const IDS = ['constructor', 'toString', '__proto__', 'hasOwnProperty', 'valueOf'];

function call(id: string, path: string): ChatMessage {
  return {
    role: 'assistant',
    content: null,
    tool_calls: [{ id, type: 'function', function: { name: 'read_file', arguments: JSON.stringify({ path }) } }],
  } as ChatMessage;
}

const result = (id: string, text: string): ChatMessage => ({ role: 'tool', tool_call_id: id, content: text });

describe('ledger: tool call ids that name Object.prototype members', () => {
  it.each(IDS)('a result for %s with no call is ignored like any unknown id', (id) => {
    const msgs: ChatMessage[] = [{ role: 'user', content: 'go' }, result(id, 'out')];
    const r = applyLedger(msgs, undefined, { now: 1 });
    expect(r.state.observations).toEqual([]);
    expect(Object.keys(r.state.open)).toEqual([]);
    expect(r.messages).toBe(msgs);
  });

  it.each(IDS)('a call %s left open is a key of the stored state and is matched on the next call', (id) => {
    const first: ChatMessage[] = [{ role: 'user', content: 'go' }, call(id, 'src/a.py')];
    const a = applyLedger(first, undefined, { now: 1 });
    expect(Object.keys(a.state.open)).toEqual([id]);
    // The JSON a store keeps (Redis) and reads back holds it as a key.
    const stored = JSON.parse(JSON.stringify(a.state)) as LedgerState;
    expect(Object.keys(stored.open)).toEqual([id]);
    const b = applyLedger([...first, result(id, '1\tx = 1\n')], stored, { now: 2 });
    expect(b.state.observations.map((o) => [o.id, o.reads.map((e) => e.uri)])).toEqual([[id, ['file://src/a.py']]]);
    expect(Object.keys(b.state.open)).toEqual([]);
    expect(b.state.calls.flat().map((c) => c[0])).toEqual([id]);
  });

  it('open calls have no prototype and the JSON of a plain record', () => {
    const st = emptyLedger();
    expect(Object.getPrototypeOf(st.open)).toBeNull();
    st.open.x = { tool: 't', args: {}, call: 1 };
    expect(JSON.stringify(st.open)).toBe(JSON.stringify({ x: { tool: 't', args: {}, call: 1 } }));
  });
});
