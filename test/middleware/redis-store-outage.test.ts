// The Redis session store over a real redis-server that is killed and started again at its address
// (a unix socket in the server's own folder: unlike a TCP port, nothing else can take it meanwhile).
// Once connected, a command issued while Redis is away fails at once and is not queued: with the
// client's offline queue on, each one (a put carries the whole state) was held until the next
// reconnect attempt, and those issued since the last attempt were sent when Redis came back,
// though their callers had been told they failed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RedisProc, startRedisProcOnSocket } from '../../loadtest/chaos/redis-proc.ts';
import { RedisSessionStore } from '../../middleware/session/redis-store.ts';
import { noteState } from '../fixtures/session-state.ts';
import { retainedMb } from '../helpers/retained.ts';
import { until } from '../helpers/gateway.ts';

let redis: RedisProc;
beforeAll(async () => {
  redis = await startRedisProcOnSocket();
});
afterAll(async () => {
  await redis?.dispose();
});

const state = (sessionId: string, calls: number) => noteState(sessionId, calls, 4_000);

/** The client's queue of commands held while disconnected (private in ioredis' typings). */
const queued = (store: RedisSessionStore): number =>
  (store.client as unknown as { offlineQueue: { length: number } }).offlineQueue.length;

describe('RedisSessionStore read cache', () => {
  it('keeps at most readCacheEntries sessions (bytes alone let it fill 64 MB)', async () => {
    // a command timeout far beyond the test: the default 50 ms fails a put on a loaded machine
    const store = new RedisSessionStore({ url: redis.url, readCacheEntries: 3, commandTimeoutMs: 60_000 });
    const known = (store as unknown as { known: { size: number; has(k: string): boolean } }).known;
    try {
      for (let i = 0; i < 10; i++) await store.put(state(`cache-${i}`, i + 1));
      expect(known.size).toBe(3);
      for (let i = 0; i < 10; i++) expect((await store.get('t', `cache-${i}`))?.calls).toBe(i + 1);
      expect(known.size).toBe(3);
    } finally {
      await store.close();
    }
  });

  it('allocates nothing up front for its entry bound (the gateway sizes it quota × tenants)', async () => {
    let store: RedisSessionStore | undefined;
    const mb = retainedMb(() => {
      store = new RedisSessionStore({ url: redis.url, readCacheEntries: 1_000_000, commandTimeoutMs: 60_000 });
    });
    await store?.close();
    // lru-cache's own `max` allocated its slots: 1,000,000 of them held ~24 MB of heap
    expect(mb).toBeLessThan(2);
  });
});

describe('RedisSessionStore through a Redis outage', () => {
  it('fails at once while Redis is away, queues nothing, and works again when it is back', async () => {
    // a command timeout far beyond the test: a call that waits for it shows as a queued command
    const store = new RedisSessionStore({ url: redis.url, commandTimeoutMs: 60_000 });
    try {
      await store.put(state('before', 1));
      expect((await store.get('t', 'before'))?.calls).toBe(1);

      await redis.kill();
      await until(() => store.client.status !== 'ready');
      const puts = [1, 2, 3].map((i) => store.put(state(`during-${i}`, i)));
      const get = store.get('t', 'before');
      expect(queued(store)).toBe(0);
      for (const p of puts) await expect(p).rejects.toThrow();
      await expect(get).rejects.toThrow();

      await redis.start();
      await until(() => store.client.status === 'ready', 30_000);
      // commands run in order: once this answers, anything held from the outage has run too
      await store.put(state('after', 5));
      expect((await store.get('t', 'after'))?.calls).toBe(5);
      const other = new RedisSessionStore({ url: redis.url, commandTimeoutMs: 60_000 });
      try {
        for (const i of [1, 2, 3]) expect(await other.get('t', `during-${i}`)).toBeUndefined();
        expect(await other.get('t', 'before')).toBeUndefined(); // killed without persistence
        expect((await other.get('t', 'after'))?.calls).toBe(5);
      } finally {
        await other.close();
      }
    } finally {
      await store.close();
    }
  });
});
