// A SessionStore that never throws into the request path: Redis (or any primary) in front of a
// bounded local memory store. Every put lands locally first; a failed primary write marks the
// session dirty and is written back after the primary answers again. Reads race the primary
// against a short timeout and fall back to the local copy. When both exist and the primary gives
// write versions (SessionState.version, Redis), the local copy wins only while it holds writes the
// primary has not had and nothing was written there since the write they continue (so a state
// written during an outage is not lost on recovery, and one another replica wrote meanwhile is not
// hidden); without versions, the one with more calls (then the newer) wins.
// Write-backs run one at a time (a call asking for one while one runs shares it): every primary
// answer asks for one, and 50 concurrent ones after an outage each re-sent the same whole states
// (a state leaves the dirty set only once its own write answered), ~50 × 16 puts at once.
// A write-back never lands over a newer state (primary.putUnlessNewer: checked where the state is
// stored): between reading its local copy and writing it, this replica's own request, or another
// replica, may have written a newer one, which other replicas would otherwise briefly read older.
// "Newer" is by write version: each dirty session remembers the primary's version its writes
// continue (the last this replica read or wrote, kept per session), and its write-back lands only
// if no write landed after that one; calls and clocks do not enter (a session deleted or expired
// and started again elsewhere, or a replica's clock ahead, misordered the calls/updatedAt rule).
import { LRUCache } from 'lru-cache';
import { DEFAULT_MAX_SESSIONS, MemorySessionStore } from './memory-store.ts';
import type { SessionState, SessionStore } from './store.ts';
import type { StoreLog } from './redis-store.ts';

export const DEFAULT_PRIMARY_TIMEOUT_MS = 50;
export const MAX_WRITEBACK_PER_CALL = 16;
/** Sessions per tenant whose last read or written primary write version is kept (the gateway passes
 * its per-tenant session quota, as the local store's; one forgotten counts as continuing none: its
 * write-back yields to any state). Per tenant, so one tenant's many sessions never make another's
 * outage writes yield. */
export const DEFAULT_VERSIONS_KEPT = DEFAULT_MAX_SESSIONS;

export interface ResilientStoreOptions {
  local?: SessionStore;
  timeoutMs?: number;
  log?: StoreLog;
  /** Write versions kept per tenant (default DEFAULT_VERSIONS_KEPT). */
  versionsPerTenant?: number;
}

const TIMEOUT = Symbol('timeout');

export class ResilientSessionStore implements SessionStore {
  private readonly local: SessionStore;
  private readonly timeoutMs: number;
  private readonly log: StoreLog;
  /** Sessions with writes the primary has not had, and the primary's write version they continue. */
  private readonly dirty = new Map<string, { tenant: string; sessionId: string; base: number | undefined }>();
  /** Per tenant, per session: the primary's write version this replica last read or wrote. */
  private readonly versions = new Map<string, LRUCache<string, number>>();
  private readonly versionsPerTenant: number;
  private healthy = true;
  /** The write-back running now, shared by whoever asks for one meanwhile. */
  private writing: Promise<number> | undefined;

  constructor(
    private readonly primary: SessionStore,
    opts: ResilientStoreOptions = {},
  ) {
    this.local = opts.local ?? new MemorySessionStore();
    this.timeoutMs = opts.timeoutMs ?? DEFAULT_PRIMARY_TIMEOUT_MS;
    this.log = opts.log ?? (() => undefined);
    this.versionsPerTenant = opts.versionsPerTenant ?? DEFAULT_VERSIONS_KEPT;
  }

  private setVersion(tenant: string, sessionId: string, v: number): void {
    let t = this.versions.get(tenant);
    if (t === undefined) {
      t = new LRUCache<string, number>({ max: this.versionsPerTenant });
      this.versions.set(tenant, t);
    }
    t.set(sessionId, v);
  }

  /** Whether the last primary operation succeeded. */
  get primaryHealthy(): boolean {
    return this.healthy;
  }

  get pendingWriteBacks(): number {
    return this.dirty.size;
  }

  private async tryPrimary<T>(op: string, f: () => Promise<T>): Promise<{ ok: true; value: T } | { ok: false }> {
    let timer: NodeJS.Timeout | undefined;
    try {
      const p = f();
      const value = await Promise.race([
        p,
        new Promise<typeof TIMEOUT>((res) => (timer = setTimeout(() => res(TIMEOUT), this.timeoutMs))),
      ]);
      if (value === TIMEOUT) {
        p.catch(() => undefined);
        throw new Error(`timed out after ${this.timeoutMs} ms`);
      }
      if (!this.healthy) this.log('session store primary is back', { op });
      this.healthy = true;
      return { ok: true, value: value as T };
    } catch (err) {
      if (this.healthy)
        this.log('session store primary failed; serving local state', {
          op,
          error: String((err as Error)?.message ?? err),
        });
      this.healthy = false;
      return { ok: false };
    } finally {
      if (timer) clearTimeout(timer);
    }
  }

  async get(tenant: string, sessionId: string): Promise<SessionState | undefined> {
    const local = await this.local.get(tenant, sessionId).catch(() => undefined);
    const r = await this.tryPrimary('get', () => this.primary.get(tenant, sessionId));
    if (!r.ok) return local;
    void this.writeBack();
    const remote = r.value;
    if (!remote) return local;
    const key = keyOf(tenant, sessionId);
    if (remote.version !== undefined) this.setVersion(tenant, sessionId, remote.version);
    if (!local) return remote;
    if (remote.version === undefined) return newer(local, remote);
    const d = this.dirty.get(key);
    return d !== undefined && remote.version <= (d.base ?? 0) ? local : remote;
  }

  async put(state: SessionState): Promise<void> {
    await this.local.put(state).catch(() => undefined);
    const key = keyOf(state.tenant, state.sessionId);
    const r = await this.tryPrimary('put', () => this.primary.put(state));
    if (r.ok) {
      this.dirty.delete(key);
      if (state.version !== undefined) this.setVersion(state.tenant, state.sessionId, state.version);
      void this.writeBack();
    } else if (!this.dirty.has(key))
      // the first unwritten state continues the last version seen; later ones continue it
      this.dirty.set(key, {
        tenant: state.tenant,
        sessionId: state.sessionId,
        base: this.versions.get(state.tenant)?.get(state.sessionId),
      });
  }

  async delete(tenant: string, sessionId: string): Promise<void> {
    this.dirty.delete(keyOf(tenant, sessionId));
    this.versions.get(tenant)?.delete(sessionId);
    await this.local.delete(tenant, sessionId).catch(() => undefined);
    await this.tryPrimary('delete', () => this.primary.delete(tenant, sessionId));
  }

  async list(tenant: string, limit?: number): Promise<string[]> {
    const r = await this.tryPrimary('list', () => this.primary.list(tenant, limit));
    if (r.ok) return r.value;
    return this.local.list(tenant, limit).catch(() => []);
  }

  /** Writes locally-held states back to the primary (bounded per call; the count written, a state
   *  the primary holds newer is dropped uncounted); while one runs, asking again returns that one. */
  writeBack(): Promise<number> {
    if (this.dirty.size === 0) return Promise.resolve(0);
    this.writing ??= this.drain().finally(() => {
      this.writing = undefined;
    });
    return this.writing;
  }

  private async drain(): Promise<number> {
    let n = 0;
    for (const [key, { tenant, sessionId, base }] of [...this.dirty].slice(0, MAX_WRITEBACK_PER_CALL)) {
      const st = await this.local.get(tenant, sessionId).catch(() => undefined);
      if (!st) {
        this.dirty.delete(key);
        continue;
      }
      st.version = base;
      const r = await this.tryPrimary('writeback', () => this.writeOlder(st));
      if (!r.ok) break;
      this.dirty.delete(key);
      if (!r.value) continue;
      n++;
      if (st.version !== undefined) this.setVersion(tenant, sessionId, st.version);
    }
    return n;
  }

  /** A kept state written unless the primary holds a newer one (true: written). */
  private async writeOlder(st: SessionState): Promise<boolean> {
    if (this.primary.putUnlessNewer) return this.primary.putUnlessNewer(st);
    await this.primary.put(st);
    return true;
  }

  async close(): Promise<void> {
    await this.primary.close().catch(() => undefined);
    await this.local.close().catch(() => undefined);
  }
}

const keyOf = (tenant: string, sessionId: string): string => `${tenant}\u0000${sessionId}`;

/** Without write versions: more calls, then the later updatedAt. */
function newer(a: SessionState, b: SessionState): SessionState {
  if (a.calls !== b.calls) return a.calls > b.calls ? a : b;
  return a.updatedAt >= b.updatedAt ? a : b;
}
