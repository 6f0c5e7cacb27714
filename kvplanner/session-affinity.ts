// Session affinity: session key -> worker, with idle expiry and per-worker totals (live sessions,
// their last prompt tokens) so new sessions can be spread by expected KV footprint.
// Recency order: a doubly linked list through the entries (a touch moves the entry to the back),
// so expiry and the size bound pop from the front; sweeps run every 1024 assignments: O(1)
// amortised per operation. The list keeps the order a Map's insertion order kept with a touch as
// delete + set (what this used before), without the two Map writes per call: the Map set after the
// delete was most of assign(), and its deleted entries made it rehash every ~size calls.
// Per-worker totals count pinned sessions until they expire or are swept.

/** Idle time after which a session no longer pins a worker (agents pause for tools, not hours). */
export const DEFAULT_SESSION_TTL_MS = 15 * 60_000;
export const DEFAULT_MAX_SESSIONS = 200_000;
/** sweep expired sessions once per 1024 assignments (expiry is also checked on every get) */
const SWEEP_EVERY_MASK = 1023;

interface Entry {
  readonly key: string;
  worker: string;
  tokens: number;
  lastSeen: number;
  /** neighbours in recency order (older, newer) */
  prev: Entry | undefined;
  next: Entry | undefined;
}

export type AffinityListener = (ev: { key: string; worker: string; tokens: number }) => void;

export class SessionAffinity {
  private readonly map = new Map<string, Entry>();
  /** least and most recently touched entries */
  private head: Entry | undefined = undefined;
  private tail: Entry | undefined = undefined;
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
      this.drop(e);
      return undefined;
    }
    return e;
  }

  assign(key: string, worker: string, tokens: number, now: number, notify = true): void {
    let e = this.map.get(key);
    // a re-pinned session keeps its entry object and moves to the back of the recency order: no
    // allocation and no Map write on a session's every call
    if (e) {
      const old = this.liveTotals(e.worker);
      old.sessions--;
      old.tokens -= e.tokens;
      this.unlink(e);
      e.worker = worker;
      e.tokens = tokens;
      e.lastSeen = now;
    } else {
      e = { key, worker, tokens, lastSeen: now, prev: undefined, next: undefined };
      this.map.set(key, e);
    }
    this.append(e);
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
    for (let e = this.head; e !== undefined; ) {
      if (this.map.size <= this.maxSessions && now - e.lastSeen <= this.ttlMs) break;
      const next = e.next;
      this.drop(e);
      e = next;
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

  private drop(e: Entry): void {
    this.map.delete(e.key);
    this.unlink(e);
    const t = this.liveTotals(e.worker);
    t.sessions--;
    t.tokens -= e.tokens;
  }

  /** Takes `e` out of the recency order. */
  private unlink(e: Entry): void {
    if (e.prev === undefined) this.head = e.next;
    else e.prev.next = e.next;
    if (e.next === undefined) this.tail = e.prev;
    else e.next.prev = e.prev;
    e.prev = undefined;
    e.next = undefined;
  }

  /** Puts `e` (out of the order) at its back: the most recently touched. */
  private append(e: Entry): void {
    e.prev = this.tail;
    if (this.tail === undefined) this.head = e;
    else this.tail.next = e;
    this.tail = e;
  }
}
