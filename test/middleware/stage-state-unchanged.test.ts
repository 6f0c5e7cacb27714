// A slot rewritten with the value it already holds (at the same version) keeps its entry, the
// frozen one a store handed out, so the put has no new entry to freeze; a new value or another
// version writes a new entry; the stored JSON is the same either way.
import { describe, expect, it } from 'vitest';
import { isDeepFrozen } from '../../middleware/deep-freeze.ts';
import { MemorySessionStore } from '../../middleware/session/memory-store.ts';
import { defineSlot, readSlot, writeSlot } from '../../middleware/session/stage-state.ts';
import { SESSION_SCHEMA_VERSION, type SessionState } from '../../middleware/session/store.ts';

const LEAD = defineSlot<string>('lead', 1);
const LEAD_V2 = defineSlot<string>('lead', 2);

function state(): SessionState {
  return {
    schema: SESSION_SCHEMA_VERSION,
    tenant: 't',
    sessionId: 's',
    model: 'm',
    rootHash: 'r',
    calls: 0,
    updatedAt: 1,
  };
}

describe('writeSlot of an unchanged value', () => {
  it('keeps the stored entry; a changed value or version writes a new one', async () => {
    const store = new MemorySessionStore();
    const st = state();
    writeSlot(st, LEAD, 'abc');
    await store.put(st);
    const got = (await store.get('t', 's'))!;
    const entry = got.stages!.lead;
    expect(isDeepFrozen(entry)).toBe(true);
    writeSlot(got, LEAD, 'abc');
    expect(got.stages!.lead).toBe(entry);
    await store.put(got);
    const again = (await store.get('t', 's'))!;
    expect(again.stages!.lead).toBe(entry);
    expect(JSON.stringify(again)).toBe(JSON.stringify(got));
    writeSlot(again, LEAD, 'abd');
    expect(again.stages!.lead).not.toBe(entry);
    expect(readSlot(again, LEAD)).toBe('abd');
    writeSlot(again, LEAD_V2, 'abd');
    expect(again.stages!.lead).toEqual({ v: 2, s: 'abd' });
    expect(readSlot(again, LEAD)).toBeUndefined();
    // The entry the store holds was never changed.
    expect(entry).toEqual({ v: 1, s: 'abc' });
  });
});
