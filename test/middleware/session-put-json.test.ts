// The quota decorator hands its JSON of a state to the memory store below it (one stringify per
// put): what is stored must still be the state as put, a state mutated and put again is stored
// anew, and a state with a checksum is stored without it.
import { describe, expect, it } from 'vitest';
import { MemorySessionStore } from '../../middleware/session/memory-store.ts';
import { SESSION_SCHEMA_VERSION, type SessionState } from '../../middleware/session/store.ts';
import { TenantQuotaStore } from '../../middleware/session/tenant-quota-store.ts';

const state = (calls: number): SessionState => ({
  schema: SESSION_SCHEMA_VERSION,
  tenant: 'A',
  sessionId: 's',
  model: 'm',
  rootHash: 'r',
  calls,
  updatedAt: 1,
  stages: { pad: { v: 1, s: 'x'.repeat(100) } },
});

describe('one JSON per put across stacked stores', () => {
  it('stores the state as put, and the mutated state when the same object is put again', async () => {
    const inner = new MemorySessionStore();
    const s = new TenantQuotaStore(inner, { maxSessions: 4, maxBytes: 1 << 20 });
    const st = state(1);
    await s.put(st);
    expect(await s.get('A', 's')).toEqual(st);
    st.calls = 2;
    st.stages!.pad.s = 'changed';
    await s.put(st);
    expect(await s.get('A', 's')).toEqual({ ...state(2), stages: { pad: { v: 1, s: 'changed' } } });
    // A direct put to the memory store after a quota put of another object serialises its own state.
    const other = state(7);
    await inner.put(other);
    expect((await inner.get('A', 's'))?.calls).toBe(7);
  });

  it('drops a checksum the state carries, as before', async () => {
    const s = new TenantQuotaStore(new MemorySessionStore(), { maxSessions: 4, maxBytes: 1 << 20 });
    await s.put({ ...state(3), checksum: 'abc' });
    const got = await s.get('A', 's');
    expect(got?.checksum).toBeUndefined();
    expect(got?.calls).toBe(3);
  });
});
