// The resilient session store's write-back against writes and deletes made while it runs, and
// deletes made while Redis is down (resilient-store.ts, dirty-marks.ts). Each interleaving is made
// deterministic by a hook in the primary: it runs inside the write-back's write, after the store
// read its local copy and before the write reaches Redis. Real redis-server; a third store reads
// what other replicas would.
import { afterAll, describe, expect, inject, it, vi } from 'vitest';
import { ResilientSessionStore } from '../../middleware/session/resilient-store.ts';
import type { SessionState, SessionStore } from '../../middleware/session/store.ts';
import { noteState } from '../fixtures/session-state.ts';
import { replicaRig } from '../helpers/store-replica.ts';
import { until } from '../helpers/until.ts';

const rig = replicaRig(inject('redisUrl'));
const { redis, replica } = rig;
afterAll(() => rig.close());

const state = (sessionId: string, calls: number, more: Partial<SessionState> = {}): SessionState => ({
  ...noteState(sessionId, calls, 300),
  ...more,
});

const reader = redis();

/** Write-backs until nothing is pending (each call writes at most a bounded batch). */
async function drain(r: ResilientSessionStore): Promise<void> {
  for (let i = 0; i < 10 && r.pendingWriteBacks > 0; i++) await r.writeBack();
  expect(r.pendingWriteBacks).toBe(0);
}

describe('a write-back clears a dirty mark only if nothing marked it again meanwhile', () => {
  it('a state saved locally while the write-back wrote the older one is written back after it', async () => {
    const a = replica();
    await a.r.put(state('race-put', 1));
    a.down = true;
    await a.r.put(state('race-put', 2)); // kept: Redis is down
    a.down = false;
    // while the write-back writes calls 2, the next call saves calls 3 and Redis fails it again
    a.inWriteBack = async () => {
      a.down = true;
      await a.r.put(state('race-put', 3));
      a.down = false;
    };
    expect(await a.r.writeBack()).toBe(1);
    expect((await reader.get('t', 'race-put'))?.calls).toBe(2);
    expect(a.r.pendingWriteBacks).toBe(1); // calls 3 is still owed
    await drain(a.r);
    expect((await reader.get('t', 'race-put'))?.calls).toBe(3);
    expect((await a.r.get('t', 'race-put'))?.calls).toBe(3);
  });
});

describe('a write answered only after the timeout still landed', () => {
  it('a state kept after a late write is written back over it, not refused as older', async () => {
    const primary = redis();
    const sw = { down: false, hold: undefined as Promise<void> | undefined, entered: () => {} };
    let late: Promise<void> | undefined;
    const fail = () => Promise.reject(new Error('ECONNREFUSED'));
    const store: SessionStore = {
      get: (t, i) => (sw.down ? fail() : primary.get(t, i)),
      put: async (st) => {
        if (sw.down) return fail();
        const hold = sw.hold;
        sw.hold = undefined;
        if (hold === undefined) return primary.put(st);
        sw.entered();
        await hold; // a stalled Redis: the write is sent, nothing answers yet
        late = primary.put(st);
        return late;
      },
      putUnlessNewer: (st) => (sw.down ? fail() : primary.putUnlessNewer(st)),
      delete: (t, i) => (sw.down ? fail() : primary.delete(t, i)),
      deleteUnlessNewer: (t, i, since) => (sw.down ? fail() : primary.deleteUnlessNewer(t, i, since)),
      list: (t, l) => primary.list(t, l),
      close: () => primary.close(),
    };
    const timeoutMs = 60_000;
    const r = new ResilientSessionStore(store, { timeoutMs });
    await r.put(state('late', 1));
    let release = () => {};
    sw.hold = new Promise<void>((res) => (release = res));
    const entered = new Promise<void>((res) => (sw.entered = res));
    // the store gives up on calls 2 (its timeout, fired here rather than waited for)
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      const given = r.put(state('late', 2));
      await entered;
      vi.advanceTimersByTime(timeoutMs);
      await given;
    } finally {
      vi.useRealTimers();
    }
    expect(r.pendingWriteBacks).toBe(1);
    sw.down = true;
    await r.put(state('late', 3)); // then refused outright
    sw.down = false;
    release(); // the stalled write of calls 2 lands now
    await until(() => late !== undefined);
    await late;
    await new Promise((res) => setImmediate(res)); // the store's own callbacks on it
    expect((await reader.get('t', 'late'))?.calls).toBe(2);
    await drain(r);
    expect((await reader.get('t', 'late'))?.calls).toBe(3);
    expect((await r.get('t', 'late'))?.calls).toBe(3);
  });
});

describe('a delete the primary did not have wins over the kept and the stored state', () => {
  it('deleted during the outage: neither the kept state nor the stored one comes back', async () => {
    const a = replica();
    await a.r.put(state('del-out', 1));
    a.down = true;
    await a.r.put(state('del-out', 2));
    await a.r.delete('t', 'del-out');
    expect(a.r.pendingWriteBacks).toBe(1); // the delete
    a.down = false;
    expect(await a.r.get('t', 'del-out')).toBeUndefined(); // Redis still holds calls 1 until written back
    await drain(a.r);
    expect(await reader.get('t', 'del-out')).toBeUndefined();
    expect(await a.r.get('t', 'del-out')).toBeUndefined();
  });

  it('deleted while the write-back writes the kept state: the delete still wins', async () => {
    const a = replica();
    await a.r.put(state('del-wb', 1));
    a.down = true;
    await a.r.put(state('del-wb', 2));
    a.down = false;
    // the delete reaches Redis before the write-back's write does
    a.inWriteBack = () => a.r.delete('t', 'del-wb');
    await a.r.writeBack();
    await drain(a.r);
    expect(await reader.get('t', 'del-wb')).toBeUndefined();
    expect(await a.r.get('t', 'del-wb')).toBeUndefined();
  });

  it('a state saved after the delete during the outage is the one written back', async () => {
    const a = replica();
    await a.r.put(state('del-new', 4));
    a.down = true;
    await a.r.delete('t', 'del-new');
    await a.r.put(state('del-new', 1, { model: 'again' })); // the session started again
    a.down = false;
    await drain(a.r);
    const read = await reader.get('t', 'del-new');
    expect([read?.calls, read?.model]).toEqual([1, 'again']);
    expect((await a.r.get('t', 'del-new'))?.model).toBe('again');
  });

  it('a kept delete yields to a state another replica wrote after the one it deleted', async () => {
    const a = replica();
    const b = redis();
    await a.r.put(state('del-other', 1));
    a.down = true;
    await a.r.delete('t', 'del-other');
    await b.put(state('del-other', 5, { model: 'b' }));
    a.down = false;
    expect((await a.r.get('t', 'del-other'))?.model).toBe('b');
    await drain(a.r);
    expect((await reader.get('t', 'del-other'))?.model).toBe('b');
  });

  it('kept deletes are bounded per tenant; one tenant’s deletes never drop another’s', async () => {
    const a = replica(2);
    a.down = true;
    await a.r.put({ ...state('bound-u', 1), tenant: 'u' });
    await a.r.delete('u', 'bound-u');
    for (let i = 0; i < 5; i++) await a.r.delete('t', `bound-${i}`);
    expect(a.r.pendingWriteBacks).toBe(3); // t's 2 newest deletes and u's one
    a.down = false;
    await drain(a.r);
  });
});

describe('a put and a delete of one session at the same instant', () => {
  // The quota deleting a session (another session's put pushed it out) while the session's own put
  // is in flight, or a session started again while its delete is. Whichever the store was called
  // with last wins, in Redis and in the replica, in every order the two writes reach Redis.
  it('called in one turn, the put first: the delete wins', async () => {
    const a = replica();
    await a.r.put(state('pd-put-first', 1));
    await Promise.all([a.r.put(state('pd-put-first', 2)), a.r.delete('t', 'pd-put-first')]);
    await drain(a.r);
    expect(await reader.get('t', 'pd-put-first')).toBeUndefined();
    expect(await a.r.get('t', 'pd-put-first')).toBeUndefined();
  });

  it('called in one turn, the delete first: the put wins (the session started again)', async () => {
    const a = replica();
    await a.r.put(state('pd-del-first', 4));
    await Promise.all([a.r.delete('t', 'pd-del-first'), a.r.put(state('pd-del-first', 1, { model: 'again' }))]);
    await drain(a.r);
    expect((await reader.get('t', 'pd-del-first'))?.model).toBe('again');
    expect((await a.r.get('t', 'pd-del-first'))?.model).toBe('again');
  });

  it('the put first, its write reaching Redis after the DEL (a retried write): the delete wins', async () => {
    const a = replica();
    await a.r.put(state('pd-put-late', 1));
    // the delete is made, Redis answering it, while the put's write is held
    a.inPut = () => a.r.delete('t', 'pd-put-late');
    await a.r.put(state('pd-put-late', 2)); // its write landed last: the delete is owed again
    await drain(a.r);
    expect(await reader.get('t', 'pd-put-late')).toBeUndefined();
    expect(await a.r.get('t', 'pd-put-late')).toBeUndefined();
  });

  it('the delete first, its DEL reaching Redis after the put’s write: the put wins', async () => {
    const a = replica();
    await a.r.put(state('pd-del-late', 4));
    // the session's next put is made, Redis answering it, while the delete's DEL is held
    a.inDelete = () => a.r.put(state('pd-del-late', 1, { model: 'again' }));
    await a.r.delete('t', 'pd-del-late'); // its DEL landed last: the state is owed again
    await drain(a.r);
    expect((await reader.get('t', 'pd-del-late'))?.model).toBe('again');
    expect((await a.r.get('t', 'pd-del-late'))?.model).toBe('again');
  });
});
