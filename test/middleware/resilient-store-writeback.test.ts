// After a Redis outage the resilient session store writes the states it kept locally back to
// Redis. Every get and put that reaches Redis starts a write-back; with 50 sessions in flight that
// was 50 write-backs at once, each re-sending the same (up to 16) whole states, since a state
// leaves the dirty set only once its own write answered: ~50 × 16 whole-state encodes and puts in
// the first moments after the outage (the gateway's heap and malloc peak of `bench chaos --redis`).
// One write-back runs at a time now; a call made while one runs shares it. Real redis-server.
import { afterAll, describe, expect, inject, it } from 'vitest';
import { RedisSessionStore } from '../../middleware/session/redis-store.ts';
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
