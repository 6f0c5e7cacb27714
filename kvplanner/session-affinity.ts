// Session affinity: session key -> worker, with idle expiry and per-worker totals (live sessions,
// their last prompt tokens) so new sessions can be spread by expected KV footprint.
// Recency order: a doubly linked list through the entries (a touch moves the entry to the back),
// so expiry and the size bound pop from the front; sweeps run every 1024 assignments: O(1)
// amortised per operation. The list keeps the order a Map's insertion order kept with a touch as
// delete + set (what this used before), without the two Map writes per call: the Map set after the
// delete was most of assign(), and its deleted entries made it rehash every ~size calls.
// Per-worker totals count pinned sessions until they expire or are swept. Each worker gets a dense
// number on first sight (numberOf) and its totals live in two typed arrays at that number: a
// new-session decision reads every worker's, from a few cache lines instead of one object each.

/** Idle time after which a session no longer pins a worker (agents pause for tools, not hours). */
export const DEFAULT_SESSION_TTL_MS = 15 * 60_000;
export const DEFAULT_MAX_SESSIONS = 200_000;
/** sweep expired sessions once per 1024 assignments (expiry is also checked on every get) */
const SWEEP_EVERY_MASK = 1023;

interface Entry {
  readonly key: string;
  worker: string;
  /** the worker's dense number (numberOf) */
  n: number;
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
  /** worker id → dense number; the totals by number (live sessions, their last prompt tokens) */
  private readonly numbers = new Map<string, number>();
  private sessionsBy = new Float64Array(8);
  private tokensBy = new Float64Array(8);
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
    const n = this.numberOf(worker);
    if (e) {
      this.sessionsBy[e.n]--;
      this.tokensBy[e.n] -= e.tokens;
      this.unlink(e);
      e.worker = worker;
      e.n = n;
      e.tokens = tokens;
      e.lastSeen = now;
    } else {
      e = { key, worker, n, tokens, lastSeen: now, prev: undefined, next: undefined };
      this.map.set(key, e);
    }
    this.append(e);
    this.sessionsBy[n]++;
    this.tokensBy[n] += tokens;
    // a sweep walks from the front of the Map, over the holes that touches leave there: amortise it
    if (this.map.size > this.maxSessions || (++this.ops & SWEEP_EVERY_MASK) === 0) this.sweep(now);
    if (notify) for (const l of this.listeners) l({ key, worker, tokens });
  }

  /** Live sessions and their tokens pinned to `worker`. */
  load(worker: string): { sessions: number; tokens: number } {
    const n = this.numbers.get(worker);
    return n === undefined ? { sessions: 0, tokens: 0 } : { sessions: this.sessionsBy[n], tokens: this.tokensBy[n] };
  }

  sweep(now: number): void {
    for (let e = this.head; e !== undefined; ) {
      if (this.map.size <= this.maxSessions && now - e.lastSeen <= this.ttlMs) break;
      const next = e.next;
      this.drop(e);
      e = next;
    }
  }

  /** The dense number of `worker` (given on first sight, kept for the affinity's lifetime: a caller
   *  may keep it per worker): its totals are sessions()[n] and tokens()[n]. */
  numberOf(worker: string): number {
    let n = this.numbers.get(worker);
    if (n === undefined) {
      n = this.numbers.size;
      this.numbers.set(worker, n);
      if (n >= this.sessionsBy.length) {
        const s = new Float64Array(2 * this.sessionsBy.length);
        s.set(this.sessionsBy);
        const t = new Float64Array(2 * this.tokensBy.length);
        t.set(this.tokensBy);
        this.sessionsBy = s;
        this.tokensBy = t;
      }
    }
    return n;
  }

  /** Live sessions by worker number (numberOf). Read only; a later numberOf may replace the array. */
  sessions(): Float64Array {
    return this.sessionsBy;
  }

  /** Their last prompt tokens by worker number, as sessions(). */
  tokens(): Float64Array {
    return this.tokensBy;
  }

  private drop(e: Entry): void {
    this.map.delete(e.key);
    this.unlink(e);
    this.sessionsBy[e.n]--;
    this.tokensBy[e.n] -= e.tokens;
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
