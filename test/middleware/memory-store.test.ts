import { describe, expect, it } from 'vitest';
import { MemorySessionStore } from '../../middleware/session/memory-store.ts';
import { retainedMb } from '../helpers/retained.ts';
import { paddedState } from '../helpers/session-state.ts';

const state = paddedState;

describe('MemorySessionStore', () => {
  it('namespaces by tenant, copies the top level on write and on read, freezes parts, drops a foreign checksum', async () => {
    const s = new MemorySessionStore();
    const st = { ...state('A', 's1'), checksum: 'stale' };
    await s.put(st);
    st.calls = 99;
    // Parts are shared and frozen once put: a stage writes a new part instead (writeSlot).
    expect(() => {
      st.stages!.pad.s = 'changed';
    }).toThrow(TypeError);
    st.stages = { ...st.stages, other: { v: 1, s: 'new part' } };
    const got = await s.get('A', 's1');
    expect(got?.calls).toBe(1);
    expect(got?.stages).toEqual({ pad: { v: 1, s: '' } });
    expect(got?.checksum).toBeUndefined();
    got!.calls = 7;
    expect((await s.get('A', 's1'))?.calls).toBe(1);
    expect(await s.get('B', 's1')).toBeUndefined();
    expect(await s.list('A')).toEqual(['s1']);
    await s.delete('A', 's1');
    expect(await s.get('A', 's1')).toBeUndefined();
  });

  it('evicts least recently used sessions by count and by bytes, and expires by TTL', async () => {
    const byCount = new MemorySessionStore({ maxSessions: 2 });
    for (const id of ['a', 'b', 'c']) await byCount.put(state('T', id));
    expect(await byCount.get('T', 'a')).toBeUndefined();
    expect(await byCount.get('T', 'c')).toBeDefined();
    const byBytes = new MemorySessionStore({ maxBytes: 5000 });
    await byBytes.put(state('T', 'big1', 'x'.repeat(2000)));
    await byBytes.put(state('T', 'big2', 'x'.repeat(2000)));
    await byBytes.put(state('T', 'big3', 'x'.repeat(2000)));
    expect(await byBytes.get('T', 'big1')).toBeUndefined();
    expect(byBytes.stats().bytes).toBeLessThanOrEqual(5000);
    // the count bound holds through re-puts and gets (setWithin, not lru-cache's max)
    for (const id of ['c', 'd', 'c', 'e']) await byCount.put(state('T', id));
    expect(byCount.stats().sessions).toBe(2);
    expect(await byCount.get('T', 'd')).toBeUndefined();
    const ttl = new MemorySessionStore({ ttlMs: 1 });
    await ttl.put(state('T', 'x'));
    await new Promise((r) => setTimeout(r, 20));
    expect(await ttl.get('T', 'x')).toBeUndefined();
  });

  it('allocates nothing up front for its entry bound (the gateway sizes it quota × tenants)', () => {
    let store: MemorySessionStore | undefined;
    const mb = retainedMb(() => {
      store = new MemorySessionStore({ maxSessions: 1_000_000 });
    });
    expect(store?.stats().sessions).toBe(0);
    // lru-cache's own `max` allocated its slots, with TTL and sizes: 1,000,000 of them held ~40 MB of heap
    expect(mb).toBeLessThan(2);
  });
});
