// Per-(tenant, session) mutual exclusion inside one process: a session's state is read, changed by
// the stages and written back as one section, so two concurrent calls of one session must not both
// start from the same version (the later write would drop the earlier call's learning). Calls of
// other sessions or tenants never wait on each other (one FIFO queue per key, nothing global).
// Acquire and release O(1) amortised; a key's queue holds at most `maxWaiters` waiters (more are
// refused with session_busy, 429), a waiter whose request is aborted leaves its queue, and a key
// with no holder is forgotten, so memory is bounded by the calls in flight.
// One lock per store (WeakMap): every pipeline sharing a store shares its locks. Across replicas the
// store's own put decides (see docs/sessions.md).
import { GatewayError } from '../errors.ts';
import type { AbortLike } from '../types.ts';
import type { SessionStore } from './store.ts';

/** Calls of one session that may wait behind the one holding it (an agent rarely has more than a few). */
export const DEFAULT_MAX_SESSION_WAITERS = 64;

interface Waiter {
  grant: () => void;
}

export class KeyedLock {
  /** key → waiters behind the holder (present while the key is held). */
  private readonly held = new Map<string, Waiter[]>();

  constructor(private readonly maxWaiters: number = DEFAULT_MAX_SESSION_WAITERS) {}

  /** Resolves with the release function once the caller holds `key`. */
  acquire(key: string, signal?: AbortLike): Promise<() => void> {
    const queue = this.held.get(key);
    if (queue === undefined) {
      this.held.set(key, []);
      return Promise.resolve(this.releaser(key));
    }
    if (signal?.aborted) return Promise.reject(abortError(signal));
    if (queue.length >= this.maxWaiters)
      return Promise.reject(
        new GatewayError('session_busy', `more than ${this.maxWaiters} concurrent calls of one session`),
      );
    return new Promise((resolve, reject) => {
      const onAbort = (): void => {
        const i = queue.indexOf(w);
        if (i >= 0) queue.splice(i, 1);
        reject(abortError(signal!));
      };
      const w: Waiter = {
        grant: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve(this.releaser(key));
        },
      };
      queue.push(w);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** Calls waiting for `key` (tests and diagnostics). */
  waiting(key: string): number {
    return this.held.get(key)?.length ?? 0;
  }

  /** Keys held now. */
  get size(): number {
    return this.held.size;
  }

  private releaser(key: string): () => void {
    let done = false;
    return () => {
      if (done) return;
      done = true;
      const queue = this.held.get(key);
      const next = queue?.shift();
      if (next) next.grant();
      else this.held.delete(key);
    };
  }
}

const abortError = (signal: AbortLike): Error =>
  signal.reason instanceof Error ? signal.reason : new Error('request aborted while waiting for its session');

const locks = new WeakMap<SessionStore, KeyedLock>();

/** The lock shared by everything writing sessions through `store` in this process. */
export function sessionLockOf(store: SessionStore): KeyedLock {
  let lock = locks.get(store);
  if (!lock) {
    lock = new KeyedLock();
    locks.set(store, lock);
  }
  return lock;
}

/** The key of a session: tenant and id (both already bounded by the caller). */
export const sessionLockKey = (tenant: string, id: string): string => `${tenant}\u0000${id}`;
