// Session affinity: session key -> worker, with idle expiry and per-worker totals (live sessions,
// their last prompt tokens) so new sessions can be spread by expected KV footprint.
// Map insertion order doubles as recency order (touch = delete + set), so expiry and the size
// bound pop from the front; sweeps run every 1024 assignments: O(1) amortised per operation.
// Per-worker totals count pinned sessions until they expire or are swept.

/** Idle time after which a session no longer pins a worker (agents pause for tools, not hours). */
export const DEFAULT_SESSION_TTL_MS = 15 * 60_000;
export const DEFAULT_MAX_SESSIONS = 200_000;
/** sweep expired sessions once per 1024 assignments (expiry is also checked on every get) */
const SWEEP_EVERY_MASK = 1023;

interface Entry {
  worker: string;
  tokens: number;
  lastSeen: number;
}

export type AffinityListener = (ev: { key: string; worker: string; tokens: number }) => void;

export class SessionAffinity {
  private readonly map = new Map<string, Entry>();
  private readonly perWorker = new Map<string, { sessions: number; tokens: number }>();
  private readonly listeners: AffinityListener[] = [];
  private ops = 0;

  constructor(
    readonly ttlMs: number = DEFAULT_SESSION_TTL_MS,
    readonly maxSessions: number = DEFAULT_MAX_SESSIONS,
  ) {}

  onChange(fn: AffinityListener): void {
    this.listeners.push(fn);
  }

  get size(): number {
    return this.map.size;
  }

  get(key: string, now: number): string | undefined {
    return this.entry(key, now)?.worker;
  }

  /** The live pin (worker and the prompt tokens of the call that set it), or undefined. A view of
   *  the entry: a later assign of the same key changes it, so read it before re-pinning. */
  entry(key: string, now: number): { readonly worker: string; readonly tokens: number } | undefined {
    const e = this.map.get(key);
    if (!e) return undefined;
    if (now - e.lastSeen > this.ttlMs) {
      this.drop(key, e);
      return undefined;
    }
    return e;
  }

  assign(key: string, worker: string, tokens: number, now: number, notify = true): void {
    let e = this.map.get(key);
    // a re-pinned session keeps its entry object (delete + set: it still moves to the back, the
    // recency order): no allocation on a session's every call
    if (e) {
      this.drop(key, e);
      e.worker = worker;
      e.tokens = tokens;
      e.lastSeen = now;
    } else e = { worker, tokens, lastSeen: now };
    this.map.set(key, e);
    const t = this.liveTotals(worker);
    t.sessions++;
    t.tokens += tokens;
    // a sweep walks from the front of the Map, over the holes that touches leave there: amortise it
    if (this.map.size > this.maxSessions || (++this.ops & SWEEP_EVERY_MASK) === 0) this.sweep(now);
    if (notify) for (const l of this.listeners) l({ key, worker, tokens });
  }

  /** Live sessions and their tokens pinned to `worker`. */
  load(worker: string): { sessions: number; tokens: number } {
    return this.perWorker.get(worker) ?? { sessions: 0, tokens: 0 };
  }

  sweep(now: number): void {
    for (const [key, e] of this.map) {
      if (this.map.size <= this.maxSessions && now - e.lastSeen <= this.ttlMs) break;
      this.drop(key, e);
    }
  }

  /** The live totals of `worker` (the same object for the worker's lifetime: a caller may keep it
   *  per worker instead of looking it up on every decision). */
  totals(worker: string): { readonly sessions: number; readonly tokens: number } {
    return this.liveTotals(worker);
  }

  private liveTotals(worker: string): { sessions: number; tokens: number } {
    let t = this.perWorker.get(worker);
    if (!t) {
      t = { sessions: 0, tokens: 0 };
      this.perWorker.set(worker, t);
    }
    return t;
  }

  private drop(key: string, e: Entry): void {
    this.map.delete(key);
    const t = this.liveTotals(e.worker);
    t.sessions--;
    t.tokens -= e.tokens;
  }
}
