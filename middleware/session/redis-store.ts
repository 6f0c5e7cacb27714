// Redis SessionStore (ioredis). Key `ctxgate:sess:{tenant}:{sessionId}` (both parts
// URI-encoded so a tenant name can never reach into another tenant's key space), value the
// canonical JSON of the state with schema version, root hash, calls watermark and a sha256
// checksum verified on read: a mismatch or foreign schema is treated as absent and logged.
// Writes carry a TTL; states over maxBytes are refused (the resilient wrapper keeps them locally).
// Short command timeouts so a dead Redis fails fast instead of stalling requests.
import { Redis, type RedisOptions } from 'ioredis';
import { canonicalJson } from '../canonical-json.ts';
import { checksumValid, withChecksum } from './checksum.ts';
import { SESSION_SCHEMA_VERSION, type SessionState, type SessionStore } from './store.ts';

export const REDIS_KEY_PREFIX = 'ctxgate:sess:';
export const DEFAULT_REDIS_TTL_S = 6 * 60 * 60;
export const DEFAULT_REDIS_MAX_BYTES = 2 * 1024 * 1024;
export const DEFAULT_REDIS_COMMAND_TIMEOUT_MS = 50;
export const DEFAULT_LIST_LIMIT = 100;

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

export class RedisSessionStore implements SessionStore {
  readonly client: Redis;
  private readonly owns: boolean;
  private readonly ttl: number;
  private readonly maxBytes: number;
  private readonly log: StoreLog;

  constructor(opts: RedisStoreOptions) {
    this.owns = opts.client ? opts.ownsClient === true : true;
    this.client =
      opts.client ?? new Redis(opts.url ?? 'redis://127.0.0.1:6379', fastFailRedisOptions(opts.commandTimeoutMs));
    // ioredis emits 'error' on connection loss; unhandled it would crash the process.
    if (!opts.client) this.client.on('error', () => undefined);
    this.ttl = opts.ttlSeconds ?? DEFAULT_REDIS_TTL_S;
    this.maxBytes = opts.maxBytes ?? DEFAULT_REDIS_MAX_BYTES;
    this.log = opts.log ?? (() => undefined);
  }

  async get(tenant: string, sessionId: string): Promise<SessionState | undefined> {
    const raw = await this.client.get(redisKey(tenant, sessionId));
    if (raw === null) return undefined;
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
    return state;
  }

  async put(state: SessionState): Promise<void> {
    const doc = withChecksum(state);
    const text = canonicalJson(doc);
    if (Buffer.byteLength(text) > this.maxBytes) {
      throw new StateTooLargeError(`session state is ${Buffer.byteLength(text)} bytes > ${this.maxBytes}`);
    }
    await this.client.set(redisKey(state.tenant, state.sessionId), text, 'EX', this.ttl);
    state.checksum = doc.checksum;
  }

  async delete(tenant: string, sessionId: string): Promise<void> {
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
