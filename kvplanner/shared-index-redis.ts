// Replica sharing of the ctxgate prefix index and session pins through Redis (optional).
// select() stays synchronous and local: this module listens to the policy's local changes,
// batches them (every flushMs) into one XADD on a per-model stream plus SET session keys with a
// TTL, and feeds other replicas' batches (XREAD every pollMs, from the retained log on start) back
// into the in-memory index without re-publishing them. A session key select() finds unpinned is
// looked up (GET, on this module's timer, never from select) so its next call finds its worker. Redis down: batches are dropped, reads
// skipped, `degraded` is set; nothing is thrown towards routing. A stalled Redis (connection up,
// no answers) costs a session call at most commandTimeoutMs per lookup/store, then routing goes on locally. Stream capped (MAXLEN ~ logMaxLen).
// Session homes are also kept in step synchronously when the gateway calls beforeSelect/afterSelect
// around select(): one GET of the session's key before (another replica's home is adopted), one SET
// after when the home changed (awaited before the request goes upstream, so before the answer). The
// periodic log alone let one session's calls alternating between two replicas back to back land on
// a fresh worker every other call (14 flips in 28 calls); Redis is then the session table's truth
// and the log only warms the prefix index. Cost: one Redis round trip per session call, two when
// its home changes.
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { CtxgatePolicy } from './policies/ctxgate.ts';
import type { Policy, RouteInfo } from './types.ts';

export interface SharedIndexOptions {
  redisUrl: string;
  /** the model whose policy this is: keys are per model */
  model: string;
  replicaId?: string;
  keyPrefix?: string;
  flushMs?: number;
  pollMs?: number;
  logMaxLen?: number;
  /** most block hashes per insert carried to other replicas (the newest part of a chain) */
  maxHashesPerEvent?: number;
  /** ms before a Redis command counts as failed (the session lookups sit in the request path) */
  commandTimeoutMs?: number;
  /** a failed or timed-out call; `op` says which (routing carried on with this replica's view) */
  onError?: (err: Error, op: SharedIndexOp) => void;
}

/** What the shared index was doing when Redis failed (a bounded metric label). */
export type SharedIndexOp = 'lookup' | 'store' | 'flush' | 'poll' | 'connection';

/** Bounds on the per-replica bookkeeping (misses awaiting lookup, pins recently published). */
const MAX_MISSES = 10_000;
const MAX_PUBLISHED = 100_000;

export const SHARED_INDEX_DEFAULTS = {
  keyPrefix: 'ctxgate',
  flushMs: 50,
  pollMs: 200,
  logMaxLen: 2000,
  maxHashesPerEvent: 4096,
  // A stalled Redis (paused by a fork, a long command, a failover, a half-open link) keeps the
  // connection 'ready' and never answers: without a timeout every session call would wait on it.
  commandTimeoutMs: 100,
} as const;

type Event =
  | { k: 'i'; w: string; h: string[] } // insert
  | { k: 'e'; w: string; h: string[] } // evict
  | { k: 's'; s: string; w: string; t: number }; // session pin

interface Batch {
  r: string;
  ev: Event[];
}

export class SharedIndexRedis {
  readonly replicaId: string;
  private readonly redis: Redis;
  private readonly o: Required<Omit<SharedIndexOptions, 'replicaId' | 'onError'>> & Pick<SharedIndexOptions, 'onError'>;
  private queue: Event[] = [];
  private lastId = '0';
  private timers: NodeJS.Timeout[] = [];
  private applying = false;
  private readonly misses = new Set<string>();
  private readonly published = new Map<string, { worker: string; at: number }>();
  private stopped = false;
  /** set once the gateway syncs homes around select(): the periodic flush then leaves the
   *  session keys alone (a late batched SET could overwrite a newer home another replica stored) */
  private syncPlacement = false;
  /** the home read from Redis before select(), per request (what afterSelect compares against) */
  private readonly seen = new WeakMap<RouteInfo, string | null>();
  degraded = false;

  constructor(
    private readonly policy: CtxgatePolicy,
    opts: SharedIndexOptions,
  ) {
    this.replicaId = opts.replicaId ?? randomUUID();
    this.o = { ...SHARED_INDEX_DEFAULTS, ...opts };
    this.redis = new Redis(opts.redisUrl, {
      lazyConnect: false,
      enableOfflineQueue: false, // fail fast while disconnected instead of queueing unboundedly
      maxRetriesPerRequest: 1,
      commandTimeout: this.o.commandTimeoutMs,
      retryStrategy: (times) => Math.min(times * 200, 5000),
    });
    this.redis.on('error', (err: Error) => this.fail(err, 'connection'));
    this.redis.on('ready', () => {
      this.degraded = false;
    });
    policy.index.onChange((ev) => {
      if (this.applying) return;
      if (ev.kind === 'insert') {
        const from = Math.max(ev.newFrom ?? 0, ev.hashes.length - this.o.maxHashesPerEvent);
        if (from < ev.hashes.length) this.queue.push({ k: 'i', w: ev.workerId, h: ev.hashes.slice(from) });
      } else this.queue.push({ k: 'e', w: ev.workerId, h: [...ev.hashes] });
    });
    policy.affinity.onChange((ev) => {
      if (this.applying) return;
      // a pin is published when it changes, and refreshed once per quarter TTL while in use
      const now = Date.now();
      const last = this.published.get(ev.key);
      if (last && last.worker === ev.worker && now - last.at < this.policy.affinity.ttlMs / 4) return;
      this.published.delete(ev.key);
      this.published.set(ev.key, { worker: ev.worker, at: now });
      if (this.published.size > MAX_PUBLISHED) this.published.delete(this.published.keys().next().value!);
      this.queue.push({ k: 's', s: ev.key, w: ev.worker, t: ev.tokens });
    });
    // select() only notes the miss; the lookup runs on this module's own timer
    policy.onSessionMiss((key) => {
      if (this.misses.size < MAX_MISSES) this.misses.add(key);
    });
  }

  private k(suffix: string): string {
    return `${this.o.keyPrefix}:${this.o.model}:${suffix}`;
  }

  private fail(err: Error, op: SharedIndexOp): void {
    this.degraded = true;
    this.o.onError?.(err, op);
  }

  /** Whether the Redis link is up now (while it is not, this replica routes on its own view). */
  get ready(): boolean {
    return this.redis.status === 'ready';
  }

  /** Starts the periodic flush and poll. */
  start(): this {
    const flush = setInterval(() => {
      void this.flush();
      void this.fetchMisses();
    }, this.o.flushMs);
    const poll = setInterval(() => void this.pull(), this.o.pollMs);
    flush.unref();
    poll.unref();
    this.timers.push(flush, poll);
    return this;
  }

  /** Sends the queued local changes as one batch; drops them when Redis is unavailable. */
  async flush(): Promise<void> {
    if (this.queue.length === 0) return;
    const ev = this.queue;
    this.queue = [];
    if (!this.ready) {
      this.degraded = true;
      return;
    }
    try {
      const ttl = Math.ceil(this.policy.affinity.ttlMs / 1000);
      const m = this.redis.multi();
      m.xadd(
        this.k('log'),
        'MAXLEN',
        '~',
        String(this.o.logMaxLen),
        '*',
        'b',
        JSON.stringify({ r: this.replicaId, ev } satisfies Batch),
      );
      if (!this.syncPlacement)
        for (const e of ev) if (e.k === 's') m.set(this.k(`s:${e.s}`), `${e.w}\u0000${e.t}`, 'EX', ttl);
      await m.exec();
    } catch (err) {
      this.fail(err as Error, 'flush');
    }
  }

  /** Applies other replicas' batches newer than the last seen; resolves to events applied. */
  async pull(): Promise<number> {
    if (!this.ready) return 0;
    let applied = 0;
    try {
      for (;;) {
        const res = (await this.redis.xread('COUNT', 500, 'STREAMS', this.k('log'), this.lastId)) as Array<
          [string, Array<[string, string[]]>]
        > | null;
        const entries = res?.[0]?.[1] ?? [];
        for (const [id, fields] of entries) {
          this.lastId = id;
          const raw = fields[fields.indexOf('b') + 1];
          if (raw) applied += this.apply(JSON.parse(raw) as Batch);
        }
        if (entries.length < 500) break;
      }
    } catch (err) {
      this.fail(err as Error, 'poll');
    }
    return applied;
  }

  private apply(b: Batch): number {
    if (b.r === this.replicaId) return 0;
    const now = Date.now();
    // The getter first does this replica's own pick insert left for its send (deferred-work.ts
    // postpone): done inside `applying`, its event would be taken for the other replica's and
    // never published.
    const index = this.policy.index;
    this.applying = true;
    try {
      for (const e of b.ev) {
        // a worker whose KV events this replica hears is indexed from them, not from others' guesses
        if (e.k !== 's' && !this.policy.guessing(e.w)) continue;
        if (e.k === 'i') {
          index.insert(e.w, e.h, false);
          this.policy.shared.insert(e.h);
        } else if (e.k === 'e') index.evict(e.w, e.h, false);
        else this.policy.affinity.assign(e.s, e.w, e.t, now, false);
      }
    } finally {
      this.applying = false;
    }
    return b.ev.length;
  }

  /** Looks up the sessions select() found unpinned since the last round. */
  async fetchMisses(): Promise<void> {
    if (this.misses.size === 0) return;
    const keys = [...this.misses];
    this.misses.clear();
    await Promise.all(keys.map((k) => this.fetchSession(k)));
  }

  /** A session this replica has not seen: adopt the pin another replica stored, if any. */
  async fetchSession(key: string): Promise<string | undefined> {
    if (!this.ready) return undefined;
    try {
      const v = await this.redis.get(this.k(`s:${key}`));
      if (!v) return undefined;
      const [worker, tokens] = v.split('\u0000');
      if (this.policy.affinity.get(key, Date.now()) !== worker) {
        // re-published: the pin this replica just made for the "new" session must not win in Redis
        this.policy.affinity.assign(key, worker, Number(tokens) || 0, Date.now(), true);
      }
      return worker;
    } catch (err) {
      this.fail(err as Error, 'lookup');
      return undefined;
    }
  }

  /**
   * Before select(): the session's home as Redis holds it becomes this replica's pin (another
   * replica may have placed or moved the session since this one last saw it). Never throws.
   */
  async beforeSelect(info: RouteInfo): Promise<void> {
    this.syncPlacement = true;
    const key = sessionKey(info);
    if (!key || !this.ready) return;
    try {
      const v = await this.redis.get(this.k(`s:${key}`));
      this.degraded = false;
      this.seen.set(info, v);
      if (!v) return;
      const [worker, tokens] = v.split('\u0000');
      const now = info.nowMs ?? Date.now();
      if (this.policy.affinity.get(key, now) !== worker) {
        this.applying = true;
        try {
          this.policy.affinity.assign(key, worker, Number(tokens) || 0, now, false);
        } finally {
          this.applying = false;
        }
      }
    } catch (err) {
      this.fail(err as Error, 'lookup');
    }
  }

  /**
   * After select(): when the session's home differs from what Redis held (a new session, a
   * migration), or its key is due a TTL refresh, store it now; the caller awaits this before the
   * request goes upstream, so the next call through any replica finds it. Never throws.
   */
  async afterSelect(info: RouteInfo): Promise<void> {
    const key = sessionKey(info);
    if (!key || !this.ready) return;
    const now = Date.now();
    const worker = this.policy.affinity.get(key, info.nowMs ?? now);
    if (worker === undefined) return;
    const held = this.seen.get(info);
    const last = this.published.get(key);
    const ttlMs = this.policy.affinity.ttlMs;
    if (held?.split('\u0000')[0] === worker && last?.worker === worker && now - last.at < ttlMs / 4) return;
    try {
      await this.redis.set(
        this.k(`s:${key}`),
        `${worker}\u0000${info.promptTokens ?? 0}`,
        'EX',
        Math.ceil(ttlMs / 1000),
      );
      this.published.delete(key);
      this.published.set(key, { worker, at: now });
      if (this.published.size > MAX_PUBLISHED) this.published.delete(this.published.keys().next().value!);
    } catch (err) {
      this.fail(err as Error, 'store');
    }
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    for (const t of this.timers) clearInterval(t);
    // a long chain's index work still queued (deferred-work.ts) is published only once it is done
    this.policy.settle();
    await this.flush();
    this.redis.disconnect();
  }
}

/** The policy's session key (as CtxgatePolicy.select builds it), or undefined without a session. */
function sessionKey(info: RouteInfo): string | undefined {
  return info.sessionId ? `${info.tenant}\u0000${info.sessionId}` : undefined;
}

/**
 * Replica sharing for a model's policy when a Redis URL is configured and the policy is ctxgate;
 * undefined (each replica routes alone) otherwise. Call stop() on shutdown.
 */
export function shareIndex(
  policy: Policy,
  opts: Partial<SharedIndexOptions> & { model: string },
): SharedIndexRedis | undefined {
  if (!opts.redisUrl || !(policy instanceof CtxgatePolicy)) return undefined;
  return new SharedIndexRedis(policy, { ...opts, redisUrl: opts.redisUrl }).start();
}
