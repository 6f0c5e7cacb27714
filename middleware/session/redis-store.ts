// Redis SessionStore (ioredis). Key `ctxgate:sess:{tenant}:{sessionId}` (both parts
// URI-encoded so a tenant name can never reach into another tenant's key space), value the
// canonical JSON of the state with schema version, root hash, calls watermark and a sha256
// checksum verified on read: a mismatch or foreign schema is treated as absent and logged.
// Writes carry a TTL; states over maxBytes are refused (the resilient wrapper keeps them locally).
// Short command timeouts so a dead Redis fails fast instead of stalling requests.
// Parts are shared between calls (shared-parts.ts): a put freezes them, so their canonical JSON is
// written once per part; the last document read or written per key is kept with its state, and a
// read that finds that very text (a native compare) skips the parse and the verification. A put
// still writes the whole document; another replica's write is a different text, read afresh.
import { Redis, type RedisOptions } from 'ioredis';
import { LRUCache } from 'lru-cache';
import { canonicalJson, sha256Hex } from '../canonical-json.ts';
import { checksumValid, stateChecksum, withChecksum } from './checksum.ts';
import { snapshotOf, stateSize, thaw } from './shared-parts.ts';
import { SESSION_SCHEMA_VERSION, type SessionState, type SessionStore } from './store.ts';

export const REDIS_KEY_PREFIX = 'ctxgate:sess:';
export const DEFAULT_REDIS_TTL_S = 6 * 60 * 60;
export const DEFAULT_REDIS_MAX_BYTES = 2 * 1024 * 1024;
export const DEFAULT_REDIS_COMMAND_TIMEOUT_MS = 50;
export const DEFAULT_LIST_LIMIT = 100;
/** Bytes (stateSize) of the states kept for reads that find them unchanged. */
export const DEFAULT_REDIS_READ_CACHE_BYTES = 64 * 1024 * 1024;

export type StoreLog = (msg: string, detail?: Record<string, unknown>) => void;

export interface RedisStoreOptions {
  url?: string;
  /** An existing client (the store then does not own it unless `ownsClient`). */
  client?: Redis;
  ownsClient?: boolean;
  ttlSeconds?: number;
  maxBytes?: number;
  commandTimeoutMs?: number;
  log?: StoreLog;
  /** Bytes of states kept to skip parsing unchanged reads (0: none). */
  readCacheBytes?: number;
}

interface Known {
  text: string;
  checksum: string;
  state: SessionState;
}

export class StateTooLargeError extends Error {}

const enc = (s: string): string => encodeURIComponent(s);

export function redisKey(tenant: string, sessionId: string): string {
  return `${REDIS_KEY_PREFIX}${enc(tenant)}:${enc(sessionId)}`;
}

/** Client options that fail fast when Redis is down: per-command timeout, no retries. The
 * offline queue stays on so commands issued while first connecting are not rejected; the
 * command timeout still bounds how long they wait. */
export function fastFailRedisOptions(timeoutMs = DEFAULT_REDIS_COMMAND_TIMEOUT_MS): RedisOptions {
  return {
    commandTimeout: timeoutMs,
    connectTimeout: Math.max(200, timeoutMs * 4),
    maxRetriesPerRequest: 0,
    enableOfflineQueue: true,
    lazyConnect: false,
    retryStrategy: (times: number) => Math.min(100 * times, 2000),
  };
}

/** The stored document: the canonical JSON of the state with its checksum, the canonical JSON of
 * the rest written once (`checksum` sorts right after `calls`, the first key, so it is spliced in). */
export function documentOf(snapshot: SessionState): { text: string; checksum: string } {
  const rest = canonicalJson(snapshot);
  const checksum = sha256Hex(rest);
  const head = `{"calls":${JSON.stringify(snapshot.calls)}`;
  if (snapshot.checksum !== undefined || !rest.startsWith(head + ','))
    return { text: canonicalJson(withChecksum(snapshot)), checksum: stateChecksum(snapshot) };
  return { text: `${head},"checksum":"${checksum}"${rest.slice(head.length)}`, checksum };
}

export class RedisSessionStore implements SessionStore {
  readonly client: Redis;
  private readonly owns: boolean;
  private readonly ttl: number;
  private readonly maxBytes: number;
  private readonly log: StoreLog;
  private readonly known?: LRUCache<string, Known>;

  constructor(opts: RedisStoreOptions) {
    this.owns = opts.client ? opts.ownsClient === true : true;
    this.client =
      opts.client ?? new Redis(opts.url ?? 'redis://127.0.0.1:6379', fastFailRedisOptions(opts.commandTimeoutMs));
    // ioredis emits 'error' on connection loss; unhandled it would crash the process.
    if (!opts.client) this.client.on('error', () => undefined);
    this.ttl = opts.ttlSeconds ?? DEFAULT_REDIS_TTL_S;
    this.maxBytes = opts.maxBytes ?? DEFAULT_REDIS_MAX_BYTES;
    this.log = opts.log ?? (() => undefined);
    const cacheBytes = opts.readCacheBytes ?? DEFAULT_REDIS_READ_CACHE_BYTES;
    if (cacheBytes > 0)
      this.known = new LRUCache<string, Known>({
        maxSize: cacheBytes,
        sizeCalculation: (v) => Math.max(1, v.text.length + stateSize(v.state)),
      });
  }

  async get(tenant: string, sessionId: string): Promise<SessionState | undefined> {
    const key = redisKey(tenant, sessionId);
    const raw = await this.client.get(key);
    if (raw === null) return undefined;
    const known = this.known?.get(key);
    if (known && known.text === raw) return { ...thaw(known.state), checksum: known.checksum };
    let state: SessionState;
    try {
      state = JSON.parse(raw) as SessionState;
    } catch {
      this.log('session state is not JSON; treated as absent', { tenant, sessionId });
      return undefined;
    }
    if (state.schema !== SESSION_SCHEMA_VERSION || state.tenant !== tenant || state.sessionId !== sessionId) {
      this.log('session state of another schema or owner; treated as absent', {
        tenant,
        sessionId,
        schema: state.schema,
      });
      return undefined;
    }
    if (!checksumValid(state)) {
      this.log('session state checksum mismatch; treated as absent', { tenant, sessionId });
      return undefined;
    }
    const snapshot = snapshotOf(state);
    this.known?.set(key, { text: raw, checksum: state.checksum!, state: snapshot });
    return { ...thaw(snapshot), checksum: state.checksum };
  }

  async put(state: SessionState): Promise<void> {
    const snapshot = snapshotOf(state);
    const { text, checksum } = documentOf(snapshot);
    if (Buffer.byteLength(text) > this.maxBytes) {
      throw new StateTooLargeError(`session state is ${Buffer.byteLength(text)} bytes > ${this.maxBytes}`);
    }
    const key = redisKey(state.tenant, state.sessionId);
    // Forgotten first: a failed write must not leave this state looking like the stored one.
    this.known?.delete(key);
    await this.client.set(key, text, 'EX', this.ttl);
    this.known?.set(key, { text, checksum, state: snapshot });
    state.checksum = checksum;
  }

  async delete(tenant: string, sessionId: string): Promise<void> {
    this.known?.delete(redisKey(tenant, sessionId));
    await this.client.del(redisKey(tenant, sessionId));
  }

  async list(tenant: string, limit = DEFAULT_LIST_LIMIT): Promise<string[]> {
    const prefix = `${REDIS_KEY_PREFIX}${enc(tenant)}:`;
    // Glob metacharacters left unencoded by encodeURIComponent are escaped for MATCH.
    const pattern = prefix.replace(/[*?[\]\\]/g, '\\$&') + '*';
    const out: string[] = [];
    let cursor = '0';
    do {
      const [next, keys] = await this.client.scan(cursor, 'MATCH', pattern, 'COUNT', 200);
      cursor = next;
      for (const k of keys) {
        if (out.length >= limit) break;
        out.push(decodeURIComponent(k.slice(prefix.length)));
      }
    } while (cursor !== '0' && out.length < limit);
    return out;
  }

  async close(): Promise<void> {
    if (!this.owns) return;
    try {
      await this.client.quit();
    } catch {
      this.client.disconnect();
    }
  }
}
