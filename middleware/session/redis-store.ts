// Redis SessionStore (ioredis). Key `ctxgate:sess:{tenant}:{sessionId}` (both parts
// URI-encoded so a tenant name can never reach into another tenant's key space), a HASH holding the
// state as a head and content-addressed chunks (redis-delta-codec.ts), its version the head's
// sha256. A put sends only the chunks this replica has not seen stored, and deletes the ones no
// longer used, in one script that checks the stored version is the one the delta was made
// against (redis-delta-scripts.ts); on a mismatch (another replica wrote) it reads that version's
// head and writes its delta against it: the last writer wins whole, as with one SET, and no two
// writes mix. Each write gets a write version (`n`, monotonic per key, redis-delta-scripts.ts), set
// on the states get and put return or are given (SessionState.version); putUnlessNewer (the
// resilient store's write-back) writes only when no write landed after the one its state continues,
// in the same script (deleteUnlessNewer likewise, for a kept delete). A get sends the version held and receives nothing more when it is unchanged, else
// the head, then fetches only the chunks it does not hold; every chunk and head read is verified
// against its sha256 (a mismatch, a foreign schema or owner is treated as absent and logged).
// A state of the old whole-document format (a string with a checksum) is still read, verified
// as before, and replaced by the new format on the next put. Writes carry a TTL; states over
// maxBytes are refused (the resilient wrapper keeps them locally). Short command timeouts so a
// dead Redis fails fast instead of stalling requests. Per key this process keeps what it last
// read or wrote (version, chunk values, frozen state; LRU bounded by bytes).
import { Redis, type RedisOptions } from 'ioredis';
import { LRUCache } from 'lru-cache';
import { setWithin } from './lru-within.ts';
import { canonicalJson, sha256Hex } from '../canonical-json.ts';
import { checksumValid, stateChecksum, withChecksum } from './checksum.ts';
import {
  type Chunk,
  type ChunkIndex,
  CorruptStateError,
  decodeState,
  type Encoded,
  encodeState,
  parseChunk,
  parseHead,
  textOf,
} from './redis-delta-codec.ts';
import { type DeltaCommands, deltaCommands } from './redis-delta-scripts.ts';
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
  /** Sessions kept for that at most (the gateway passes its session quota: limits.max_sessions
   *  × tenants); by bytes alone the cache held up to 64 MB of sessions never read again. */
  readCacheEntries?: number;
}

/** What this process last read or wrote for a key. */
interface Known {
  version: string;
  /** The write version (SessionState.version). */
  n: number | undefined;
  chunks: Map<string, Chunk>;
  state: SessionState;
  /** Where each chunk sits, for the next encode of this session. */
  index: ChunkIndex;
}

/** What the read cache charges per chunk held, beside the state's own size. */
const CHUNK_ENTRY_BYTES = 96;

/** Delta writes tried against another replica's version before replacing the state whole. */
export const MAX_DELTA_TRIES = 3;

export class StateTooLargeError extends Error {}

const enc = (s: string): string => encodeURIComponent(s);

export function redisKey(tenant: string, sessionId: string): string {
  return `${REDIS_KEY_PREFIX}${enc(tenant)}:${enc(sessionId)}`;
}

/** Client options that fail fast when Redis is down: per-command timeout, no retries. The
 * offline queue is on so commands issued while first connecting are not rejected (the command
 * timeout bounds how long they wait); fastFailRedis turns it off once connected. */
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

/** A client with fastFailRedisOptions whose offline queue is off from its first connection on.
 * While Redis is away a command then fails at once instead of waiting out its timeout, and
 * nothing piles up: with the queue on, every command of an outage (session puts carry whole
 * states) was held until the next reconnect attempt, and those issued since the last failed one
 * were sent when Redis came back, though their callers had been told they failed. */
export function fastFailRedis(url: string, timeoutMs = DEFAULT_REDIS_COMMAND_TIMEOUT_MS): Redis {
  const client = new Redis(url, fastFailRedisOptions(timeoutMs));
  client.once('ready', () => {
    client.options.enableOfflineQueue = false;
  });
  return client;
}

/** The old format's stored document: the canonical JSON of the state with its checksum (still
 * read; tests write it to check the migration). */
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
  /** Entries the read cache holds at most (setWithin; lru-within.ts). */
  private readonly knownMax: number;
  private readonly cmd: DeltaCommands;

  constructor(opts: RedisStoreOptions) {
    this.owns = opts.client ? opts.ownsClient === true : true;
    this.client = opts.client ?? fastFailRedis(opts.url ?? 'redis://127.0.0.1:6379', opts.commandTimeoutMs);
    // ioredis emits 'error' on connection loss; unhandled it would crash the process.
    if (!opts.client) this.client.on('error', () => undefined);
    this.ttl = opts.ttlSeconds ?? DEFAULT_REDIS_TTL_S;
    this.maxBytes = opts.maxBytes ?? DEFAULT_REDIS_MAX_BYTES;
    this.log = opts.log ?? (() => undefined);
    this.cmd = deltaCommands(this.client);
    const cacheBytes = opts.readCacheBytes ?? DEFAULT_REDIS_READ_CACHE_BYTES;
    this.knownMax = opts.readCacheEntries || Number.POSITIVE_INFINITY;
    if (cacheBytes > 0)
      this.known = new LRUCache<string, Known>({
        maxSize: cacheBytes,
        sizeCalculation: (v) => Math.max(1, stateSize(v.state) + CHUNK_ENTRY_BYTES * v.chunks.size),
      });
  }

  async get(tenant: string, sessionId: string): Promise<SessionState | undefined> {
    const key = redisKey(tenant, sessionId);
    const known = this.known?.get(key);
    const r = await this.cmd.ctxgateSessGet(key, known?.version ?? '');
    if (r.length === 0) return undefined;
    if (r[0] === '') return this.readOldFormat(tenant, sessionId, r[1]);
    // '0': a state written before write versions (none: ordered by calls, as it was)
    const n = r[2] === '0' ? undefined : Number(r[2]);
    if (r[1] === '') return known && versioned(thaw(known.state), n);
    try {
      const state = await this.read(key, tenant, sessionId, r[0], r[1], n, known);
      return state && versioned(state, n);
    } catch (err) {
      if (!(err instanceof CorruptStateError)) throw err;
      this.log(`session state ${err.message}; treated as absent`, { tenant, sessionId });
      return undefined;
    }
  }

  /** A version this process does not hold: its head, and the chunks not held (one HMGET; an
   * atomic HGETALL when a concurrent write removed some meanwhile). */
  private async read(
    key: string,
    tenant: string,
    sessionId: string,
    version: string,
    headText: string,
    n: number | undefined,
    known: Known | undefined,
  ): Promise<SessionState | undefined> {
    let { head, ids } = parseHead(headText, version);
    const t = head.t;
    if (t.schema !== SESSION_SCHEMA_VERSION || t.tenant !== tenant || t.sessionId !== sessionId) {
      this.log('session state of another schema or owner; treated as absent', { tenant, sessionId, schema: t.schema });
      return undefined;
    }
    const chunks = new Map<string, Chunk>();
    const missing: string[] = [];
    for (const id of ids) {
      const c = known?.chunks.get(id);
      if (c) chunks.set(id, c);
      else missing.push(id);
    }
    if (missing.length > 0) {
      const texts = await this.client.hmget(key, ...missing);
      if (texts.some((x) => x === null)) {
        const all = await this.client.hgetall(key);
        if (!all.v || !all.h) return undefined;
        version = all.v;
        ({ head, ids } = parseHead(all.h, version));
        for (const id of ids) if (!chunks.has(id)) chunks.set(id, parseChunk(id, all[id] ?? ''));
      } else missing.forEach((id, i) => chunks.set(id, parseChunk(id, texts[i]!)));
    }
    const decoded = decodeState(head, (id) => chunks.get(id)!);
    const snapshot = snapshotOf(decoded.state);
    if (snapshot.schema !== SESSION_SCHEMA_VERSION || snapshot.tenant !== tenant || snapshot.sessionId !== sessionId)
      return undefined;
    for (const id of [...chunks.keys()]) if (!ids.has(id)) chunks.delete(id);
    if (this.known)
      setWithin(this.known, this.knownMax, key, { version, n, chunks, state: snapshot, index: decoded.index });
    return thaw(snapshot);
  }

  /** A state of the old whole-document format: verified by its checksum, returned as stored. */
  private readOldFormat(tenant: string, sessionId: string, raw: string): SessionState | undefined {
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
    return thaw(snapshotOf(state));
  }

  async put(state: SessionState): Promise<void> {
    await this.write(state, false);
  }

  /** put, unless a write landed after the one `state` continues (its `version`; none: any stored
   * state is newer), checked in the put script. */
  putUnlessNewer(state: SessionState): Promise<boolean> {
    return this.write(state, true);
  }

  /** Sets `state.version` to the new write version when written. */
  private async write(state: SessionState, ordered: boolean): Promise<boolean> {
    const since = state.version;
    const snapshot = snapshotOf(state);
    const key = redisKey(state.tenant, state.sessionId);
    const known = this.known?.get(key);
    const enc = encodeState(snapshot, known?.index);
    if (enc.bytes > this.maxBytes) {
      throw new StateTooLargeError(`session state is ${enc.bytes} bytes > ${this.maxBytes}`);
    }
    // Forgotten first: a failed write must not leave this state looking like the stored one.
    this.known?.delete(key);
    let base: { version: string; ids: Iterable<string> } | undefined = known
      ? { version: known.version, ids: known.chunks.keys() }
      : undefined;
    let n = 0;
    for (let tries = 0; ; tries++) {
      const delta = base !== undefined && tries < MAX_DELTA_TRIES;
      const args = putArgs(enc, this.ttl, delta ? base : undefined, ordered ? (since ?? 0) : undefined);
      const r = await this.cmd.ctxgateSessPut(key, ...args);
      if (r[0] === 1) {
        n = Number(r[1]);
        break;
      }
      if (r[0] === 2) return false;
      // Another replica wrote (or the key expired): write against what is there now.
      try {
        base = r[2] ? { version: r[1], ids: parseHead(r[2], r[1]).ids } : undefined;
      } catch {
        base = undefined;
      }
    }
    for (const c of enc.chunks.values()) c.text = undefined;
    if (this.known)
      setWithin(this.known, this.knownMax, key, {
        version: enc.version,
        n,
        chunks: enc.chunks,
        state: snapshot,
        index: enc.index,
      });
    state.version = n;
    return true;
  }

  async delete(tenant: string, sessionId: string): Promise<void> {
    this.known?.delete(redisKey(tenant, sessionId));
    await this.client.del(redisKey(tenant, sessionId));
  }

  /** delete, unless a write landed after the one `since` names (none: unless a state with a write
   * version is stored), checked in the delete script. */
  async deleteUnlessNewer(tenant: string, sessionId: string, since: number | undefined): Promise<boolean> {
    const key = redisKey(tenant, sessionId);
    this.known?.delete(key);
    return (await this.cmd.ctxgateSessDel(key, String(since ?? 0))) === 1;
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

function versioned(state: SessionState, n: number | undefined): SessionState {
  state.version = n;
  return state;
}

/** The put script's arguments: the whole state (replace), or what differs from `base` (delta);
 * `since` (ordered): only if no write after that write version landed. */
function putArgs(
  enc: Encoded,
  ttl: number,
  base: { version: string; ids: Iterable<string> } | undefined,
  since: number | undefined,
): (string | number)[] {
  const set: string[] = [];
  const del: string[] = [];
  if (base) {
    const had = new Set(base.ids);
    for (const [id, c] of enc.chunks) if (!had.has(id)) set.push(id, textOf(c));
    for (const id of had) if (!enc.chunks.has(id)) del.push(id);
  } else for (const [id, c] of enc.chunks) set.push(id, textOf(c));
  const mode = base ? 'd' : 'r';
  return [
    since !== undefined ? mode.toUpperCase() : mode,
    base?.version ?? '',
    enc.version,
    enc.head,
    ttl,
    since ?? 0,
    set.length / 2,
    ...set,
    ...del,
  ];
}
