// A put and a delete of one session in flight together, with a write-back answered in between (review
// s41 F1): the call made last wins, in the replica and in Redis. Before the fix, a delete whose DEL
// reached Redis after the later put and its write-back left Redis empty while the replica kept the
// put; a put whose write reached Redis after the later DEL brought the deleted session back.
import { afterAll, describe, expect, inject, it } from 'vitest';
import type { ResilientSessionStore } from '../../middleware/session/resilient-store.ts';
import type { SessionState } from '../../middleware/session/store.ts';
import { noteState } from '../fixtures/session-state.ts';
import { replicaRig } from '../helpers/store-replica.ts';

const rig = replicaRig(inject('redisUrl'));
afterAll(() => rig.close());
const state = (id: string, calls: number, more: Partial<SessionState> = {}): SessionState => ({
  ...noteState(id, calls, 300),
  ...more,
});
const reader = rig.redis();
async function drain(r: ResilientSessionStore): Promise<void> {
  for (let i = 0; i < 10 && r.pendingWriteBacks > 0; i++) await r.writeBack();
}

describe('delete first, its DEL reaching Redis after the put and after a write-back', () => {
  it('the put (called last) wins', async () => {
    const a = rig.replica();
    await a.r.put(state('late-del', 4));
    a.inDelete = async () => {
      await a.r.put(state('late-del', 1, { model: 'again' }));
      // the write-back the put's answer started (or one asked for now) is answered before the DEL lands
      await a.r.writeBack();
    };
    await a.r.delete('t', 'late-del');
    await drain(a.r);
    const local = await a.r.get('t', 'late-del');
    const shared = await reader.get('t', 'late-del');
    expect(local?.model).toBe('again');
    expect(shared?.model).toBe('again');
  });
});

describe('put first, its write reaching Redis after the DEL, a write-back in between', () => {
  it('the delete (called last) wins', async () => {
    const a = rig.replica();
    await a.r.put(state('late-put', 1));
    a.inPut = async () => {
      await a.r.delete('t', 'late-put');
      // any primary answer (another session's get, list, put) starts a write-back meanwhile
      await a.r.writeBack();
    };
    await a.r.put(state('late-put', 2));
    await drain(a.r);
    const local = await a.r.get('t', 'late-put');
    const shared = await reader.get('t', 'late-put');
    expect(local).toBeUndefined();
    expect(shared).toBeUndefined();
  });
});
