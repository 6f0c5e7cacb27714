// settleOwed on the state stabilise just returned (checks owed, a previous state given): the
// originals' index is this call's own until then, so the secret ones are dropped in place and the
// index frozen there once (stabilise.ts Unsettled). It must give the state of checking each
// original when stored, frozen and sized as a fresh walk sizes it, and leave the previous state
// and its index untouched.
import { describe, expect, it } from 'vitest';
import { freezeDeep, isDeepFrozen, sizeOf } from '../../middleware/deep-freeze.ts';
import { settleOwed, stabilise, type StabiliseState } from '../../middleware/stabilise/stabilise.ts';
import type { ChatMessage } from '../../middleware/types.ts';

const SECRET = 'aws key AKIAIOSFODNN7EXAMPLE in the output';

function turn(k: number, secret: boolean): ChatMessage[] {
  return [
    {
      role: 'assistant',
      content: null,
      tool_calls: [{ id: `c${k}`, type: 'function', function: { name: 'run', arguments: '{}' } }],
    },
    {
      role: 'tool',
      tool_call_id: `c${k}`,
      content: `output ${k}\n${'x'.repeat(20 + k)}${secret ? `\n${SECRET}` : ''}`,
    },
  ];
}

describe('stabilise: owed checks settled in place', () => {
  it('equals checking at store time, frozen and sized like a fresh walk; the previous state untouched', () => {
    let msgs: ChatMessage[] = [
      { role: 'system', content: 'sys' },
      { role: 'user', content: 'task' },
    ];
    let a: StabiliseState | undefined;
    let b: StabiliseState | undefined;
    let inPlace = 0;
    let dropped = 0;
    for (let k = 1; k <= 12; k++) {
      msgs = [...msgs, ...turn(k, k % 3 !== 1), ...(k % 2 === 0 ? turn(100 + k, k % 4 === 0) : [])];
      const ra = stabilise(msgs, a);
      const prev = b;
      const prevJson = JSON.stringify(prev);
      const prevOrig = prev?.orig;
      const rb = stabilise(msgs, b, { oweSecretChecks: true });
      const settled = rb.owed ? settleOwed(rb.state, rb.owed) : rb.state;
      expect(JSON.stringify(settled)).toBe(JSON.stringify(ra.state));
      if (prev !== undefined && rb.owed) {
        inPlace += settled === rb.state ? 1 : 0;
        dropped += Object.keys(rb.state.orig).length < rb.owed.length + Object.keys(prevOrig!).length ? 1 : 0;
        // The previous state and its index as they were (frozen: a write into either would throw).
        expect(JSON.stringify(prev)).toBe(prevJson);
        expect(prev.orig).toBe(prevOrig);
        expect(settled.orig).not.toBe(prevOrig);
        // Frozen and sized from the previous index with every key this call changed, dropped ones too.
        expect(isDeepFrozen(settled.orig)).toBe(true);
        expect(sizeOf(settled.orig)).toBe(sizeOf(JSON.parse(JSON.stringify(settled.orig))));
        // Settled once: a second settle changes nothing.
        expect(JSON.stringify(settleOwed(settled, rb.owed))).toBe(JSON.stringify(ra.state));
      }
      a = ra.state;
      // What a store does with the state it is given.
      b = freezeDeep(settled);
    }
    expect(inPlace).toBeGreaterThan(5);
    expect(dropped).toBeGreaterThan(2);
  });
});
