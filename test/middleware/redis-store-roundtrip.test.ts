import { afterAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { Redis } from 'ioredis';
import { documentOf, RedisSessionStore, redisKey, StateTooLargeError } from '../../middleware/session/redis-store.ts';
import { ResilientSessionStore } from '../../middleware/session/resilient-store.ts';
import { SESSION_SCHEMA_VERSION, type SessionState } from '../../middleware/session/store.ts';

const url = inject('redisUrl');
const state = (tenant: string, id: string, calls = 1): SessionState => ({
  schema: SESSION_SCHEMA_VERSION,
  tenant,
  sessionId: id,
  model: 'm',
  rootHash: 'r'.repeat(64),
  calls,
  updatedAt: 1000 + calls,
  stages: { ledger: { v: 1, s: { v: 1, seen: 3, note: 'ünïcode' } } },
});

const opened: { close(): Promise<void> }[] = [];
afterAll(async () => {
  for (const s of opened) await s.close();
});

describe('RedisSessionStore (real redis)', () => {
  it('needs a running redis', () => {
    expect(url).toMatch(/^redis:\/\//);
  });

  it('round-trips a state, tenant-scoped keys, TTL and list', async () => {
    const store = new RedisSessionStore({ url, ttlSeconds: 120, commandTimeoutMs: 5000 });
    opened.push(store);
    const s = state('acme:corp', 'sess-1');
    await store.put(s);
    const got = await store.get('acme:corp', 'sess-1');
    expect(got).toEqual(s);
    // Integrity is checked per stored chunk now, not by a whole-state checksum.
    expect(got?.checksum).toBeUndefined();
    expect(await store.get('acme', 'sess-1')).toBeUndefined();
    expect(await store.get('other', 'sess-1')).toBeUndefined();
    const raw = new Redis(url);
    const ttl = await raw.ttl(redisKey('acme:corp', 'sess-1'));
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(120);
    await store.put(state('acme:corp', 'sess-2'));
    expect((await store.list('acme:corp')).sort()).toEqual(['sess-1', 'sess-2']);
    expect(await store.list('acme')).toEqual([]);
    await store.delete('acme:corp', 'sess-2');
    expect(await store.get('acme:corp', 'sess-2')).toBeUndefined();
    await raw.quit();
  });

  it('treats a checksum mismatch (tampered value of the old format) as absent and logs it', async () => {
    const logs: string[] = [];
    const store = new RedisSessionStore({ url, log: (m) => logs.push(m), commandTimeoutMs: 5000 });
    opened.push(store);
    const raw = new Redis(url);
    const key = redisKey('t2', 'x');
    const doc = JSON.parse(documentOf(state('t2', 'x', 5)).text) as SessionState;
    doc.calls = 99; // tamper without fixing the checksum
    await raw.set(key, JSON.stringify(doc));
    expect(await store.get('t2', 'x')).toBeUndefined();
    expect(logs.some((l) => /checksum mismatch/.test(l))).toBe(true);
    await raw.quit();
  });

  it("an unchanged read is the known state, a replica's write is read afresh", async () => {
    const a = new RedisSessionStore({ url, commandTimeoutMs: 5000 });
    const b = new RedisSessionStore({ url, commandTimeoutMs: 5000 });
    opened.push(a, b);
    const s = state('rep', 'one', 1);
    await a.put(s);
    const raw = new Redis(url);
    expect(await raw.type(redisKey('rep', 'one'))).toBe('hash');
    // Replica b reads, changes one part and writes; a then reads b's state, not its own.
    const onB = (await b.get('rep', 'one'))!;
    expect(onB).toEqual(s);
    onB.calls = 2;
    onB.stages = { ...onB.stages, fingerprint: { v: 1, s: { stableHashes: ['x'] } } };
    await b.put(onB);
    const onA = (await a.get('rep', 'one'))!;
    expect(onA.calls).toBe(2);
    expect(onA.stages?.fingerprint).toEqual({ v: 1, s: { stableHashes: ['x'] } });
    expect(await a.get('rep', 'one')).toEqual(onA);
    // Parts of a state read are shared and frozen: changing one in place throws.
    expect(() => {
      (onA.stages!.ledger.s as { seen: number }).seen = 4;
    }).toThrow(TypeError);
    await raw.quit();
  });

  it('refuses states over maxBytes', async () => {
    const store = new RedisSessionStore({ url, maxBytes: 200, commandTimeoutMs: 5000 });
    opened.push(store);
    await expect(
      store.put({ ...state('t3', 'big'), stages: { blob: { v: 1, s: 'x'.repeat(500) } } }),
    ).rejects.toBeInstanceOf(StateTooLargeError);
  });
});

describe('ResilientSessionStore', () => {
  it('serves from local state when redis is down, never throwing', async () => {
    const logs: string[] = [];
    // port 1: nothing listens there (a port picked free and closed could be taken by then)
    const store = new ResilientSessionStore(new RedisSessionStore({ url: 'redis://127.0.0.1:1' }), {
      log: (m) => logs.push(m),
    });
    opened.push(store);
    await store.put(state('t', 'a', 3));
    const got = await store.get('t', 'a');
    expect(got?.calls).toBe(3);
    expect(await store.list('t')).toEqual(['a']);
    expect(store.primaryHealthy).toBe(false);
    expect(store.pendingWriteBacks).toBe(1);
    expect(logs[0]).toMatch(/primary failed/);
  });

  it('writes back local states once redis answers, then reads what redis holds (a later write there wins)', async () => {
    const redis = new RedisSessionStore({ url, commandTimeoutMs: 5000 });
    let down = true;
    // an outage switch in front of the real store
    const primary = {
      get: (t: string, i: string) => (down ? Promise.reject(new Error('ECONNREFUSED')) : redis.get(t, i)),
      put: (s: SessionState) => (down ? Promise.reject(new Error('ECONNREFUSED')) : redis.put(s)),
      delete: (t: string, i: string) => redis.delete(t, i),
      list: (t: string, l?: number) => redis.list(t, l),
      close: () => redis.close(),
    };
    const store = new ResilientSessionStore(primary, { timeoutMs: 5000 });
    opened.push(store);
    await store.put(state('wb', 's', 7));
    expect(store.pendingWriteBacks).toBe(1);
    down = false;
    expect(await store.writeBack()).toBe(1);
    const direct = new RedisSessionStore({ url, commandTimeoutMs: 5000 });
    opened.push(direct);
    expect((await direct.get('wb', 's'))?.calls).toBe(7);
    // written after the state written back (a higher write version): it wins, fewer calls or not
    await direct.put(state('wb', 's', 2));
    expect((await store.get('wb', 's'))?.calls).toBe(2);
  });
});
