// Replicas of the resilient session store over one real redis-server, for the store's tests. Each
// is a ResilientSessionStore over its own RedisSessionStore behind an outage switch (`down`: every
// primary call fails as a refused connection would), with hooks run once inside the next primary
// write of a kind, after the store sent it and before it reaches Redis: a test makes an
// interleaving deterministic by doing the racing operation (or awaiting a held promise) there.
// Every store opened here is closed by close().
import { RedisSessionStore } from '../../middleware/session/redis-store.ts';
import { ResilientSessionStore } from '../../middleware/session/resilient-store.ts';
import type { SessionStore } from '../../middleware/session/store.ts';

type Hook = (() => Promise<void>) | undefined;

export interface Replica {
  r: ResilientSessionStore;
  /** Redis unreachable for this replica: its primary calls fail at once. */
  down: boolean;
  /** Run once inside the next write-back's write (putUnlessNewer). */
  inWriteBack: Hook;
  /** Run once inside the next put. */
  inPut: Hook;
  /** Run once inside the next delete. */
  inDelete: Hook;
}

export interface ReplicaRig {
  /** A plain Redis store (another replica's writes, or a reader of what every replica sees). */
  redis(maxBytes?: number): RedisSessionStore;
  /** `maxBytes`: the size limit of its Redis store's states (RedisSessionStore's default if absent). */
  replica(versionsPerTenant?: number, maxBytes?: number): Replica;
  close(): Promise<void>;
}

/** Redis answers count however late they come on a loaded machine. */
const COMMAND_TIMEOUT_MS = 60_000;

export function replicaRig(url: string): ReplicaRig {
  const opened: { close(): Promise<void> }[] = [];
  const redis = (maxBytes?: number): RedisSessionStore => {
    const r = new RedisSessionStore({ url, commandTimeoutMs: COMMAND_TIMEOUT_MS, maxBytes });
    opened.push(r);
    return r;
  };
  const replica = (versionsPerTenant?: number, maxBytes?: number): Replica => {
    const primary = redis(maxBytes);
    const sw = { down: false, inWriteBack: undefined as Hook, inPut: undefined as Hook, inDelete: undefined as Hook };
    const fail = () => Promise.reject(new Error('ECONNREFUSED'));
    /** `write` after the hook of that name, if one is set (taken: it runs once); without one, at
     * once (no extra turn: the store's own order of sends stays as it is with a bare Redis). */
    const after = <T>(name: 'inWriteBack' | 'inPut' | 'inDelete', write: () => Promise<T>): Promise<T> => {
      if (sw.down) return fail();
      const h = sw[name];
      sw[name] = undefined;
      return h ? h().then(write) : write();
    };
    const store: SessionStore = {
      get: (t, i) => (sw.down ? fail() : primary.get(t, i)),
      put: (st) => after('inPut', () => primary.put(st)),
      putUnlessNewer: (st) => after('inWriteBack', () => primary.putUnlessNewer(st)),
      delete: (t, i) => after('inDelete', () => primary.delete(t, i)),
      deleteUnlessNewer: (t, i, since) => (sw.down ? fail() : primary.deleteUnlessNewer(t, i, since)),
      list: (t, l) => (sw.down ? fail() : primary.list(t, l)),
      close: () => primary.close(),
    };
    const r = new ResilientSessionStore(store, { timeoutMs: COMMAND_TIMEOUT_MS, versionsPerTenant });
    opened.push(r);
    return Object.assign(sw, { r });
  };
  const close = async (): Promise<void> => {
    for (const s of opened.splice(0)) await s.close();
  };
  return { redis, replica, close };
}
