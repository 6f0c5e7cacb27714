// Consistent hash ring (Karger et al.) with virtual nodes, plus the bounded-load walk of
// "Consistent Hashing with Bounded Loads" (Mirrokni, Thorup, Zadimoghaddam, SODA 2018): a key
// goes to the first worker clockwise whose load is below c = ceil((1+ε)·(m+1)/n), m the load now.
// Build O(n·v log(n·v)), cached per worker set; lookup O(log(n·v)); walk O(n) worst case.
import type { WorkerView } from './types.ts';

/** Virtual nodes per worker: enough for ±10% key share with 4–64 workers. */
export const DEFAULT_VNODES = 160;

/** murmur3's 32-bit finaliser: spreads FNV's clustered low bits over the whole word. */
function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** 32-bit FNV-1a with a murmur3 finaliser (FNV alone clusters short keys on a ring). */
export function hash32(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return fmix32(h);
}

/** Same mix over token ids (no string building). */
export function hashTokens(ids: ArrayLike<number>, count: number): number {
  let h = 0x811c9dc5;
  const n = Math.min(count, ids.length);
  for (let i = 0; i < n; i++) {
    h ^= ids[i] & 0xffff;
    h = Math.imul(h, 0x01000193);
    h ^= ids[i] >>> 16;
    h = Math.imul(h, 0x01000193);
  }
  return fmix32(h);
}

export class HashRing {
  private points = new Uint32Array(0);
  private owners: number[] = [];
  private key = '';
  private ids: string[] = [];
  /** sorted-id index -> index in the `workers` array the ring was built for */
  private toInput: number[] = [];

  constructor(private readonly vnodes: number = DEFAULT_VNODES) {}

  /** Rebuilds only when the worker set changes. */
  private ensure(workers: readonly WorkerView[]): void {
    const ids = workers.map((w) => w.id);
    const key = ids.join('\u0000');
    if (key === this.key) return;
    const sorted = [...ids].sort();
    const pts: Array<[number, string]> = [];
    for (const id of sorted) for (let v = 0; v < this.vnodes; v++) pts.push([hash32(`${id}#${v}`), id]);
    pts.sort((a, b) => a[0] - b[0] || (a[1] < b[1] ? -1 : 1));
    this.points = Uint32Array.from(pts.map((p) => p[0]));
    this.ids = sorted;
    const inputPos = new Map(ids.map((id, i) => [id, i]));
    this.toInput = sorted.map((id) => inputPos.get(id)!);
    const pos = new Map(sorted.map((id, i) => [id, i]));
    this.owners = pts.map((p) => pos.get(p[1])!);
    this.key = key;
  }

  /** Distinct workers clockwise from `h`, in ring order. */
  *walk(workers: readonly WorkerView[], h: number): Generator<WorkerView> {
    this.ensure(workers);
    const n = this.points.length;
    if (n === 0) return;
    let lo = 0;
    let hi = n;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.points[mid] < h) lo = mid + 1;
      else hi = mid;
    }
    const seen = new Set<number>();
    for (let k = 0; k < n && seen.size < this.ids.length; k++) {
      const o = this.owners[(lo + k) % n];
      if (seen.has(o)) continue;
      seen.add(o);
      yield workers[this.toInput[o]];
    }
  }

  /** Home worker of `h` (first clockwise). */
  home(workers: readonly WorkerView[], h: number): WorkerView | undefined {
    for (const w of this.walk(workers, h)) return w;
    return undefined;
  }
}

/** Mirrokni et al. capacity: the most in-flight a worker may have before taking one more. */
export function boundedCapacity(workers: readonly WorkerView[], epsilon: number): number {
  let total = 0;
  for (const w of workers) total += w.inFlight;
  return Math.max(1, Math.ceil(((1 + epsilon) * (total + 1)) / Math.max(1, workers.length)));
}

/**
 * ctxgate's load bound: the most in-flight requests a worker may have after taking this one,
 * (1+ε)·mean + 1, mean counted with this request. The +1 (integer slack) keeps a pinned session
 * home at low load, where ceil((1+ε)·mean) alone would detour it off its cache every time two of a
 * worker's sessions happen to be active together.
 */
export function slackCapacity(workers: readonly WorkerView[], epsilon: number): number {
  let total = 0;
  for (const w of workers) total += w.inFlight;
  return Math.floor(((1 + epsilon) * (total + 1)) / workers.length + 1 + 1e-9);
}

/** Whether `w` may take one more request under capacity `cap` and its own maxInFlight. */
export function hasRoom(w: WorkerView, cap: number): boolean {
  return w.inFlight + 1 <= cap && (w.maxInFlight <= 0 || w.inFlight < w.maxInFlight);
}
