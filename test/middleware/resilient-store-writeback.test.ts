// After a Redis outage the resilient session store writes the states it kept locally back to
// Redis. Every get and put that reaches Redis starts a write-back; with 50 sessions in flight that
// was 50 write-backs at once, each re-sending the same (up to 16) whole states, since a state
// leaves the dirty set only once its own write answered: ~50 × 16 whole-state encodes and puts in
// the first moments after the outage (the gateway's heap and malloc peak of `bench chaos --redis`).
// One write-back runs at a time now; a call made while one runs shares it. A write-back never lands
// over a newer state another replica wrote meanwhile (second describe; by write version,
// session-write-version.test.ts; states stored without one by calls). Real redis-server.
import { afterAll, describe, expect, inject, it } from 'vitest';
import { documentOf, RedisSessionStore, redisKey } from '../../middleware/session/redis-store.ts';
import { ResilientSessionStore } from '../../middleware/session/resilient-store.ts';
import type { SessionState } from '../../middleware/session/store.ts';
import { noteState } from '../fixtures/session-state.ts';

const url = inject('redisUrl');
const opened: { close(): Promise<void> }[] = [];
afterAll(async () => {
  for (const s of opened) await s.close();
});

const state = (sessionId: string, calls: number) => noteState(sessionId, calls, 2_000);

/** The real Redis store behind an outage switch, counting the puts that reach it. */
function switched(redis: RedisSessionStore) {
  const s = {
    down: true,
    puts: new Map<string, number>(),
    store: {
      get: (t: string, i: string) => (s.down ? Promise.reject(new Error('ECONNREFUSED')) : redis.get(t, i)),
      put: (st: SessionState) => {
        if (s.down) return Promise.reject(new Error('ECONNREFUSED'));
        s.puts.set(st.sessionId, (s.puts.get(st.sessionId) ?? 0) + 1);
        return redis.put(st);
      },
      putUnlessNewer: (st: SessionState) => {
        if (s.down) return Promise.reject(new Error('ECONNREFUSED'));
        s.puts.set(st.sessionId, (s.puts.get(st.sessionId) ?? 0) + 1);
        return redis.putUnlessNewer(st);
      },
      delete: (t: string, i: string) => redis.delete(t, i),
      list: (t: string, l?: number) => redis.list(t, l),
      close: () => redis.close(),
    },
  };
  return s;
}

describe('ResilientSessionStore write-back after an outage', () => {
  it('writes each state kept during the outage back once, however many calls arrive at once', async () => {
    const redis = new RedisSessionStore({ url, commandTimeoutMs: 60_000 });
    const sw = switched(redis);
    const store = new ResilientSessionStore(sw.store, { timeoutMs: 60_000 });
    opened.push(store);
    const dirty = 40;
    for (let i = 0; i < dirty; i++) await store.put(state(`out-${i}`, i + 1));
    expect(store.pendingWriteBacks).toBe(dirty);

    sw.down = false;
    // 50 sessions' calls at once, as the gateway's in-flight requests read their sessions
    await Promise.all(Array.from({ length: 50 }, (_, i) => store.get('t', `live-${i}`)));
    for (let n = 0; store.pendingWriteBacks > 0 && n < 20; n++) await store.writeBack();

    expect(store.pendingWriteBacks).toBe(0);
    expect(sw.puts.size).toBe(dirty);
    expect(Math.max(...sw.puts.values())).toBe(1);
    const other = new RedisSessionStore({ url, commandTimeoutMs: 60_000 });
    opened.push(other);
    for (let i = 0; i < dirty; i++) expect((await other.get('t', `out-${i}`))?.calls).toBe(i + 1);
  });

  it('a write-back asked for while one runs shares it, and a later one starts afresh', async () => {
    const redis = new RedisSessionStore({ url, commandTimeoutMs: 60_000 });
    const sw = switched(redis);
    const store = new ResilientSessionStore(sw.store, { timeoutMs: 60_000 });
    opened.push(store);
    for (let i = 0; i < 3; i++) await store.put(state(`share-${i}`, 1));
    sw.down = false;
    const [a, b] = await Promise.all([store.writeBack(), store.writeBack()]);
    expect([a, b]).toEqual([3, 3]);
    await store.put(state('share-0', 2)); // written through: nothing dirty
    sw.down = true;
    await store.put(state('share-1', 2));
    sw.down = false;
    expect(await store.writeBack()).toBe(1);
    expect(sw.puts.get('share-1')).toBe(2);
  });
});

describe('ResilientSessionStore write-back is ordered against other writers', () => {
  /** Replica A kept `kept` during its outage; replica B wrote `other` to Redis meanwhile; then A's
   * primary answers again and A writes back. What does a third replica read? */
  async function afterWriteBack(
    id: string,
    kept: SessionState,
    other: SessionState | ((key: string) => Promise<void>),
  ) {
    const sw = switched(new RedisSessionStore({ url, commandTimeoutMs: 60_000 }));
    const a = new ResilientSessionStore(sw.store, { timeoutMs: 60_000 });
    const b = new RedisSessionStore({ url, commandTimeoutMs: 60_000 });
    const c = new RedisSessionStore({ url, commandTimeoutMs: 60_000 });
    opened.push(a, b, c);
    await a.put(kept);
    expect(a.pendingWriteBacks).toBe(1);
    if (typeof other === 'function') await other(redisKey('t', id));
    else await b.put(other);
    sw.down = false;
    const written = await a.writeBack();
    return { written, pending: a.pendingWriteBacks, read: await c.get('t', id), readA: await a.get('t', id) };
  }

  it('an older kept state (fewer calls) does not overwrite the newer one another replica wrote', async () => {
    const r = await afterWriteBack('ord-calls', state('ord-calls', 5), state('ord-calls', 6));
    expect(r.read?.calls).toBe(6);
    expect(r.readA?.calls).toBe(6);
    expect(r.written).toBe(0);
    expect(r.pending).toBe(0);
  });

  it('as many calls: the state another replica wrote after the kept one began stays', async () => {
    const kept = state('ord-time', 4);
    const later = { ...state('ord-time', 4), updatedAt: kept.updatedAt + 1, model: 'b' };
    const r = await afterWriteBack('ord-time', kept, later);
    expect(r.read?.model).toBe('b');
    expect(r.readA?.model).toBe('b');
  });

  it('more calls, or as many, do not make a kept state newer than one written after the one it continues', async () => {
    // A kept its state from no stored one; B wrote after that: B's stands (the calls rule landed A's)
    const r = await afterWriteBack('ord-new', state('ord-new', 7), state('ord-new', 6));
    expect(r.written).toBe(0);
    expect(r.read?.calls).toBe(6);
    expect(r.readA?.calls).toBe(6);
    const tie = await afterWriteBack('ord-tie', { ...state('ord-tie', 3), model: 'a' }, state('ord-tie', 3));
    expect(tie.written).toBe(0);
    expect(tie.read?.model).toBe('m');
  });

  it('the old whole-document format is ordered too; a stored value that does not parse is replaced', async () => {
    const raw = new RedisSessionStore({ url, commandTimeoutMs: 60_000 });
    opened.push(raw);
    const old = await afterWriteBack('ord-old', state('ord-old', 2), (key) =>
      raw.client.set(key, documentOf(state('ord-old', 9)).text).then(() => undefined),
    );
    expect(old.written).toBe(0);
    expect(old.read?.calls).toBe(9);
    const bad = await afterWriteBack('ord-bad', state('ord-bad', 2), (key) =>
      raw.client.hset(key, 'v', 'x', 'h', '{not json').then(() => undefined),
    );
    expect(bad.written).toBe(1);
    expect(bad.read?.calls).toBe(2);
  });
});
