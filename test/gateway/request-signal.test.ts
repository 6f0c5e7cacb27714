// The request's own abort signal (gateway/proxy/request-signal.ts) stands in for an
// AbortController's signal: it must read the same to every listener the request has (the
// session lock's waiters, each attempt's deadline) and give the same reason.
import { describe, expect, it } from 'vitest';
import { AttemptDeadline } from '../../gateway/proxy/attempt-deadline.ts';
import { RequestSignal } from '../../gateway/proxy/request-signal.ts';
import { KeyedLock } from '../../middleware/session/session-lock.ts';

describe('RequestSignal', () => {
  it("reads like an AbortController's signal: aborted once, with the same default reason", () => {
    const ours = new RequestSignal();
    const ac = new AbortController();
    const seen: string[] = [];
    ours.addEventListener('abort', () => seen.push('once'), { once: true });
    ours.addEventListener('abort', () => seen.push('always'));
    const removed = (): number => seen.push('removed');
    ours.addEventListener('abort', removed);
    ours.removeEventListener('abort', removed);
    expect(ours.aborted).toBe(false);
    expect(ours.reason).toBeUndefined();
    ours.abort();
    ours.abort(new Error('second'));
    ac.abort();
    expect(ours.aborted).toBe(true);
    expect(seen).toEqual(['once', 'always']);
    const r = ours.reason as DOMException;
    const want = ac.signal.reason as DOMException;
    expect(r).toBeInstanceOf(DOMException);
    expect(r).toBeInstanceOf(Error);
    expect([r.name, r.message, r.code]).toEqual([want.name, want.message, want.code]);
    const given = new RequestSignal();
    const why = new Error('shutdown');
    given.abort(why);
    expect(given.reason).toBe(why);
  });

  it('takes a waiter out of its session lock queue with its reason, and leaves no listener', async () => {
    const lock = new KeyedLock();
    const release = await lock.acquire('t\u0000s');
    const left = new RequestSignal();
    const stays = new RequestSignal();
    const leaving = lock.acquire('t\u0000s', left);
    const staying = lock.acquire('t\u0000s', stays);
    expect(lock.waiting('t\u0000s')).toBe(2);
    left.abort();
    await expect(leaving).rejects.toBe(left.reason);
    expect(lock.waiting('t\u0000s')).toBe(1);
    release();
    (await staying)();
    expect(stays.listenerCount('abort')).toBe(0);
    expect(lock.size).toBe(0);
  });

  it("is forwarded to an attempt's signal once, with its reason, and the attempt's end unhooks it", () => {
    const parent = new RequestSignal();
    const d = new AttemptDeadline(parent, { headersMs: 60_000, bodyMs: 60_000 });
    let fired = 0;
    d.signal.on('abort', () => fired++);
    expect(parent.listenerCount('abort')).toBe(1);
    parent.abort();
    expect(fired).toBe(1);
    expect(d.signal.reason).toBe(parent.reason);
    d.done();
    expect(parent.listenerCount('abort')).toBe(0);
    const later = new RequestSignal();
    const ended = new AttemptDeadline(later, { headersMs: 60_000, bodyMs: 60_000 });
    ended.done();
    expect(later.listenerCount('abort')).toBe(0);
    later.abort();
    expect(ended.signal.aborted).toBe(false);
  });
});
