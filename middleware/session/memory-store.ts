// In-memory SessionStore: an LRU bounded by entry count and by bytes, with a TTL. It keeps a
// frozen snapshot per session (shared-parts.ts): a get hands out a copy of the top level with the
// parts shared and frozen, a put freezes the parts it is given; no JSON parse or stringify, so a
// call costs O(parts), not O(history). A caller can still never change stored state by reference:
// top-level fields are copied and parts are frozen. Bytes are stateSize (UTF-16 code units of the
// JSON, escapes not counted), computed once per part. No checksum here (nothing crosses a process
// boundary to corrupt it); stores that serialise elsewhere (Redis) checksum. The entry bound is kept
// by setWithin (lru-within.ts), not lru-cache's `max`, which allocates every slot up front.
import { LRUCache } from 'lru-cache';
import { setWithin } from './lru-within.ts';
import { snapshotOf, stateSize, thaw } from './shared-parts.ts';
import { SESSION_SCHEMA_VERSION, type SessionState, type SessionStore } from './store.ts';

export const DEFAULT_MAX_SESSIONS = 10_000;
export const DEFAULT_MAX_BYTES = 256 * 1024 * 1024;
/** Idle sessions expire after this long (agents rarely pause longer between calls). */
export const DEFAULT_TTL_MS = 6 * 60 * 60 * 1000;
export const DEFAULT_LIST_LIMIT = 100;

export interface MemoryStoreOptions {
  maxSessions?: number;
  maxBytes?: number;
  ttlMs?: number;
}

const keyOf = (tenant: string, id: string): string => `${tenant}\u0000${id}`;

export class MemorySessionStore implements SessionStore {
  private readonly lru: LRUCache<string, SessionState>;
  private readonly maxSessions: number;

  constructor(opts: MemoryStoreOptions = {}) {
    this.maxSessions = opts.maxSessions ?? DEFAULT_MAX_SESSIONS;
    // the count bound kept by setWithin, not lru-cache's `max` (lru-within.ts: no slots up front)
    this.lru = new LRUCache<string, SessionState>({
      maxSize: opts.maxBytes ?? DEFAULT_MAX_BYTES,
      // UTF-16 code units ≈ bytes for the mostly-ASCII JSON; at least 1 so empty docs count.
      sizeCalculation: (v, k) => Math.max(1, stateSize(v) + k.length),
      ttl: opts.ttlMs ?? DEFAULT_TTL_MS,
      updateAgeOnGet: true,
    });
  }

  async get(tenant: string, sessionId: string): Promise<SessionState | undefined> {
    const state = this.lru.get(keyOf(tenant, sessionId));
    // A state written by another schema version is not trusted: the session starts afresh.
    return state && state.schema === SESSION_SCHEMA_VERSION && state.tenant === tenant ? thaw(state) : undefined;
  }

  async put(state: SessionState): Promise<void> {
    // A checksum read from another store would be stale after the caller's changes: not kept.
    setWithin(this.lru, this.maxSessions, keyOf(state.tenant, state.sessionId), snapshotOf(state));
  }

  async delete(tenant: string, sessionId: string): Promise<void> {
    this.lru.delete(keyOf(tenant, sessionId));
  }

  async list(tenant: string, limit: number = DEFAULT_LIST_LIMIT): Promise<string[]> {
    const prefix = tenant + '\u0000';
    const out: string[] = [];
    for (const k of this.lru.keys()) {
      if (out.length >= limit) break;
      if (k.startsWith(prefix)) out.push(k.slice(prefix.length));
    }
    return out;
  }

  async close(): Promise<void> {
    this.lru.clear();
  }

  /** Bytes and entries held (for metrics). */
  stats(): { sessions: number; bytes: number } {
    return { sessions: this.lru.size, bytes: this.lru.calculatedSize };
  }
}
