// The stabilise and ledger stages freeze and size the lists they copy from the previous state's
// sizes (deep-freeze.ts freezeEdited): every state they return must be sized exactly as a walk of
// its plain copy sizes it, call after call, through appends, stale reads (tombstones), elisions
// (deferred originals), originals over budget, observations over their bound, an external
// invalidation, and a rewound history.
import { describe, expect, it } from 'vitest';
import { freezeDeep, sizeOf } from '../../middleware/deep-freeze.ts';
import { applyLedger, invalidate } from '../../middleware/ledger/ledger.ts';
import type { LedgerState } from '../../middleware/ledger/types.ts';
import { stabilise, type StabiliseState } from '../../middleware/stabilise/stabilise.ts';
import type { ChatMessage } from '../../middleware/types.ts';

const output = (k: number): string =>
  Array.from({ length: 12 }, (_, i) => `${String(i + 1).padStart(4)}\tdef f_${k}_${i}(x): return x * ${i}`).join('\n');

/** One session's requests: reads, every 4th call an edit of an earlier read, every 7th an elision. */
function session(calls: number): ChatMessage[][] {
  const all: ChatMessage[] = [
    { role: 'system', content: 'You are a coding agent.' },
    { role: 'user', content: 'Fix the bug.' },
  ];
  const out: ChatMessage[][] = [];
  for (let k = 1; k <= calls; k++) {
    const id = `call_${k}`;
    const edit = k % 4 === 0;
    const path = `src/f_${edit ? k - 3 : k}.py`;
    const args = JSON.stringify(edit ? { path, old: 'a', new: 'b' } : { path });
    all.push({
      role: 'assistant',
      content: null,
      tool_calls: [{ id, type: 'function', function: { name: edit ? 'edit_file' : 'read_file', arguments: args } }],
    });
    all.push({ role: 'tool', tool_call_id: id, content: edit ? `edited ${path}` : output(k) });
    const j = all.length - 7;
    if (k % 7 === 0 && all[j]?.role === 'tool') all[j] = { ...all[j], content: '[output elided]' };
    out.push(all.slice());
  }
  return out;
}

const plainSize = (v: unknown): number => sizeOf(structuredClone(v));

describe('stage state sizes', () => {
  it('stabilise and ledger states are sized as their plain copies, every call', () => {
    const calls = session(120);
    // A rewound history (the agent dropped its last 10 calls) and a continuation after it.
    const requests = [...calls, calls[99], ...calls.slice(100)];
    let s: StabiliseState | undefined;
    let l: LedgerState | undefined;
    let tombstones = 0;
    let deferred = 0;
    for (const [i, input] of requests.entries()) {
      // Originals over a small budget are dropped; observations over a small bound trimmed.
      const r = stabilise(input, s, { maxBytes: 4_000 });
      if (i === 60 && l) l = invalidate(l, 'file:///src/f_57.py', 'changed on disk');
      const g = applyLedger(r.messages, l, { now: 1_000_000, maxObservations: 50 });
      // As the store's put does: deep-freeze what the call returns (sized from what it kept).
      s = freezeDeep(r.state);
      l = freezeDeep(g.state);
      expect(sizeOf(s), `stabilise, call ${i}`).toBe(plainSize(s));
      expect(sizeOf(l), `ledger, call ${i}`).toBe(plainSize(l));
      tombstones = Math.max(tombstones, l.tombstones.length);
      deferred = Math.max(deferred, s.d.length);
    }
    // The walk went through the paths it is about.
    expect(tombstones).toBeGreaterThan(10);
    expect(deferred).toBeGreaterThan(0);
  });
});
