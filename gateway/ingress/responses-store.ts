// Stored Responses (previous_response_id, GET/DELETE /v1/responses/{id}), namespaced by tenant so
// one tenant can never read or delete another's, even with a guessed id. Each entry holds the
// Response object and the conversation without instructions (what a follow-up continues). Bounded:
// a TTL, a per-entry byte cap (larger answers are not stored; a follow-up then gets 404), and for
// the memory store a total byte cap (LRU). Redis (when `redis.url` is set) shares them between
// replicas: key `ctxgate:resp:{tenant}:{id}` with the TTL; a dead Redis fails fast (short timeouts).
import type { Redis } from 'ioredis';
import { LRUCache } from 'lru-cache';
import { fastFailRedis } from '../../middleware/session/redis-store.ts';
import type { ChatMessage } from '../../middleware/types.ts';

export interface StoredResponse {
  response: Record<string, unknown>;
  messages: ChatMessage[];
}

export interface ResponseStore {
  get(tenant: string, id: string): Promise<StoredResponse | undefined>;
  /** False when the entry was not stored (over the per-entry cap, or the store failed). */
  put(tenant: string, id: string, entry: StoredResponse): Promise<boolean>;
  delete(tenant: string, id: string): Promise<boolean>;
  close(): Promise<void>;
}

export interface ResponseStoreOptions {
  ttlSeconds: number;
  maxEntryBytes: number;
  maxBytes: number;
}

const key = (tenant: string, id: string): string => `${encodeURIComponent(tenant)}:${encodeURIComponent(id)}`;

export class MemoryResponseStore implements ResponseStore {
  private readonly cache: LRUCache<string, string>;
  /** `clock` (ms; tests): what the TTL is measured on, read on every check; default performance.now. */
  constructor(
    private readonly o: ResponseStoreOptions,
    clock?: { now(): number },
  ) {
    this.cache = new LRUCache<string, string>({
      maxSize: o.maxBytes,
      sizeCalculation: (v) => Math.max(1, v.length),
      ttl: o.ttlSeconds * 1000,
      // lru-cache otherwise reuses one reading for 1 ms (a timer clears it), which would hide a jump
      ...(clock ? { perf: clock, ttlResolution: 0 } : {}),
    });
  }
  async get(tenant: string, id: string): Promise<StoredResponse | undefined> {
    const v = this.cache.get(key(tenant, id));
    // Stored serialised: a caller mutating what it got back cannot change the stored conversation.
    return v === undefined ? undefined : (JSON.parse(v) as StoredResponse);
  }
  async put(tenant: string, id: string, entry: StoredResponse): Promise<boolean> {
    const v = JSON.stringify(entry);
    if (v.length > this.o.maxEntryBytes) return false;
    this.cache.set(key(tenant, id), v);
    return true;
  }
  async delete(tenant: string, id: string): Promise<boolean> {
    return this.cache.delete(key(tenant, id));
  }
  async close(): Promise<void> {
    this.cache.clear();
  }
}

export const RESPONSES_KEY_PREFIX = 'ctxgate:resp:';
/** Entries reach megabytes; the session store's 50 ms command timeout is too short for them. */
const RESPONSES_REDIS_TIMEOUT_MS = 500;

export class RedisResponseStore implements ResponseStore {
  private readonly client: Redis;
  /** `commandTimeoutMs` (tests: GatewayDeps.redisTimeoutMs): how long a command may wait. */
  constructor(
    url: string,
    private readonly o: ResponseStoreOptions,
    commandTimeoutMs = RESPONSES_REDIS_TIMEOUT_MS,
  ) {
    this.client = fastFailRedis(url, commandTimeoutMs);
    this.client.on('error', () => undefined); // a down Redis reads as absent; requests do not fail on it
  }
  async get(tenant: string, id: string): Promise<StoredResponse | undefined> {
    const v = await this.client.get(RESPONSES_KEY_PREFIX + key(tenant, id)).catch(() => null);
    if (!v) return undefined;
    try {
      return JSON.parse(v) as StoredResponse;
    } catch {
      return undefined;
    }
  }
  async put(tenant: string, id: string, entry: StoredResponse): Promise<boolean> {
    const v = JSON.stringify(entry);
    if (Buffer.byteLength(v) > this.o.maxEntryBytes) return false;
    return this.client.set(RESPONSES_KEY_PREFIX + key(tenant, id), v, 'EX', this.o.ttlSeconds).then(
      () => true,
      () => false,
    );
  }
  async delete(tenant: string, id: string): Promise<boolean> {
    return (await this.client.del(RESPONSES_KEY_PREFIX + key(tenant, id)).catch(() => 0)) > 0;
  }
  async close(): Promise<void> {
    await this.client.quit().catch(() => this.client.disconnect());
  }
}

export function createResponseStore(
  o: ResponseStoreOptions,
  redisUrl?: string,
  redisTimeoutMs?: number,
): ResponseStore {
  return redisUrl ? new RedisResponseStore(redisUrl, o, redisTimeoutMs) : new MemoryResponseStore(o);
}
