// The ledger's render (tombstones re-appended at their anchors every call) against a reference that
// joins every anchor's texts afresh, as render did before its notes were told equal by their texts:
// random tombstone lists grown call by call over the same message objects, with texts shared
// (the state's own strings), copied (a state read back from JSON), re-split (the same note from
// other texts) and changed in place. Same content at every index; the same noted object whenever the note is
// the one made for that message object before.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { render } from '../../middleware/ledger/ledger.ts';
import { appendNote } from '../../middleware/ledger/message-text.ts';
import { emptyLedger, type LedgerState, type Tombstone } from '../../middleware/ledger/types.ts';
import type { ChatMessage } from '../../middleware/types.ts';

/** render as it was: every anchor's note joined and placed, no memo. */
function reference(input: ChatMessage[], tombstones: readonly Tombstone[]): ChatMessage[] {
  const out = input.slice();
  const byAnchor = new Map<number, string[]>();
  for (const t of tombstones) byAnchor.set(t.anchor, [...(byAnchor.get(t.anchor) ?? []), t.text]);
  for (const [a, texts] of byAnchor) if (a < out.length) out[a] = appendNote(out[a], texts.join('\n'));
  return out;
}

const stateWith = (tombstones: Tombstone[]): LedgerState => ({ ...emptyLedger(), tombstones });

describe('ledger render: notes told equal by their texts', () => {
  it('matches the join-every-call reference over random growing tombstone lists', () => {
    const step = fc.record({
      add: fc.array(fc.record({ anchor: fc.integer({ min: 0, max: 7 }), text: fc.constantFrom('a', 'b', 'a\nb', '') })),
      copy: fc.boolean(),
      resplit: fc.boolean(),
      change: fc.boolean(),
    });
    fc.assert(
      fc.property(fc.array(step, { minLength: 1, maxLength: 12 }), (steps) => {
        const input: ChatMessage[] = Array.from({ length: 6 }, (_, i) => ({
          role: i % 2 ? 'user' : 'tool',
          content: i === 3 ? [{ type: 'text', text: `part ${i}` }] : `message ${i}`,
        }));
        let tombs: Tombstone[] = [];
        // Per index: the last noted object render gave and its content.
        const last = new Map<number, ChatMessage>();
        for (const s of steps) {
          tombs = [...tombs, ...s.add.map((x, k) => ({ anchor: x.anchor, obs: `o${tombs.length + k}`, text: x.text }))];
          // A state read back from JSON: equal strings, not the same objects.
          if (s.copy) tombs = JSON.parse(JSON.stringify(tombs)) as Tombstone[];
          // The same joined note from other texts: two texts at one anchor read as one.
          if (s.resplit && tombs.length >= 2 && tombs[0].anchor === tombs[1].anchor)
            tombs = [{ ...tombs[0], text: `${tombs[0].text}\n${tombs[1].text}` }, ...tombs.slice(2)];
          // One text changed in place (as many texts at that anchor as before, one other).
          if (s.change && tombs.length > 0) tombs = [{ ...tombs[0], text: `${tombs[0].text}!` }, ...tombs.slice(1)];
          const got = render(input, stateWith(tombs));
          const want = reference(input, tombs);
          expect(got.map((m) => m.content)).toEqual(want.map((m) => m.content));
          for (let i = 0; i < input.length; i++) {
            if (got[i] === input[i]) continue;
            const before = last.get(i);
            // The note last made for this message object again: the very same noted object.
            if (before !== undefined && JSON.stringify(before.content) === JSON.stringify(want[i].content))
              expect(got[i]).toBe(before);
            last.set(i, got[i]);
          }
        }
      }),
      { numRuns: 300 },
    );
  });

  it('a new tombstone at an anchor already noted changes its note; the same texts keep the noted object', () => {
    const input: ChatMessage[] = [
      { role: 'user', content: 'task' },
      { role: 'tool', content: 'out', tool_call_id: 'c1' },
    ];
    const t1: Tombstone = { anchor: 1, obs: 'c0', text: 'stale one' };
    const first = render(input, stateWith([t1]));
    expect(first[1].content).toBe('out\n\nstale one');
    // Next call: the same texts (a copy of the list, as copyOf makes): the same noted object.
    expect(render(input, stateWith([{ ...t1 }]))[1]).toBe(first[1]);
    // One more tombstone at the same anchor: a longer note, never last call's object.
    const second = render(input, stateWith([t1, { anchor: 1, obs: 'c2', text: 'stale two' }]));
    expect(second[1].content).toBe('out\n\nstale one\nstale two');
    expect(second[1]).not.toBe(first[1]);
    // Equal texts as other string objects (a state read from JSON): the same note, the same object.
    const copied = JSON.parse(JSON.stringify([t1, { anchor: 1, obs: 'c2', text: 'stale two' }])) as Tombstone[];
    expect(render(input, stateWith(copied))[1]).toBe(second[1]);
  });
});
