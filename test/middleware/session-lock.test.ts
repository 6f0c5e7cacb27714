// The per-session lock (middleware/session/session-lock.ts): FIFO per key, other keys never wait,
// bounded waiters (session_busy), an aborted waiter leaves its queue, a released key is forgotten.
import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../middleware/errors.ts';
import { KeyedLock } from '../../middleware/session/session-lock.ts';

describe('KeyedLock', () => {
  it('serialises one key in arrival order and never holds up another key', async () => {
    const lock = new KeyedLock();
    const order: string[] = [];
    const r1 = await lock.acquire('t\u0000s');
    const second = lock.acquire('t\u0000s').then((r) => {
      order.push('second');
      return r;
    });
    const third = lock.acquire('t\u0000s').then((r) => {
      order.push('third');
      return r;
    });
    // another session and another tenant with the same id: granted at once
    (await lock.acquire('t\u0000other'))();
    (await lock.acquire('u\u0000s'))();
    expect(lock.waiting('t\u0000s')).toBe(2);
    expect(order).toEqual([]);
    r1();
    r1(); // a second release is a no-op, not a grant to the third
    (await second)();
    (await third)();
    expect(order).toEqual(['second', 'third']);
    expect(lock.size).toBe(0);
  });

  it('refuses waiters beyond the bound with session_busy (429)', async () => {
    const lock = new KeyedLock(2);
    const r = await lock.acquire('k');
    const waiters = [lock.acquire('k'), lock.acquire('k')];
    const err = await lock.acquire('k').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GatewayError);
    expect((err as GatewayError).code).toBe('session_busy');
    expect((err as GatewayError).status).toBe(429);
    r();
    for (const w of waiters) (await w)();
    expect(lock.size).toBe(0);
  });

  it('an aborted waiter leaves the queue; the next one is granted', async () => {
    const lock = new KeyedLock();
    const r = await lock.acquire('k');
    const ac = new AbortController();
    const gone = lock.acquire('k', ac.signal).catch((e: unknown) => e);
    const next = lock.acquire('k');
    expect(lock.waiting('k')).toBe(2);
    ac.abort(new Error('client went away'));
    expect(((await gone) as Error).message).toBe('client went away');
    expect(lock.waiting('k')).toBe(1);
    r();
    (await next)();
    expect(lock.size).toBe(0);
    // already aborted: refused without queueing
    const r2 = await lock.acquire('k');
    await expect(lock.acquire('k', AbortSignal.abort())).rejects.toBeDefined();
    expect(lock.waiting('k')).toBe(0);
    r2();
  });
});
