// The most prompt tokens any router could serve from cache on a trace: the fleet's KV pooled into
// one cache of N × ⌊KV / block⌋ blocks, managed with hindsight by Belady's MIN with bypass (on a
// miss, keep the block only if its next use comes before the furthest next use held; evict that
// one) over the prompts' blocks in arrival order. A block counts as a hit wherever it sits in the
// prompt (an engine needs the whole prefix before it; counting more keeps this an upper bound).
// Any routing over N engines holds at most that many distinct blocks at a time, a block enters a
// cache only when a prompt carrying it is served, and MIN is optimal for unit-size pages over a
// fixed order, so no router's hit rate exceeds this one when requests are served in arrival order
// (the order the fluid figures assume; an engine's FCFS queue keeps it per worker). KV held by
// running requests is ignored (also in the bound's favour). Cost O(B log B) over the B blocks of
// the trace (139k for the conversation half: ~0.1 s).
import type { FleetRequest } from './trace.ts';

export interface OracleHits {
  /** cached ÷ prompt tokens */
  hitRate: number;
  cachedTokens: number;
  promptTokens: number;
  /** blocks of the pooled cache */
  capacityBlocks: number;
}

/** Max-heap of [next use, key]; entries go stale when their key is touched again (checked on peek). */
class NextUseHeap {
  private readonly at: number[] = [];
  private readonly keys: number[] = [];

  push(at: number, key: number): void {
    let i = this.at.length;
    this.at.push(at);
    this.keys.push(key);
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (this.at[p] >= at) break;
      this.at[i] = this.at[p];
      this.keys[i] = this.keys[p];
      i = p;
    }
    this.at[i] = at;
    this.keys[i] = key;
  }

  /** The live entry with the furthest next use (stale ones dropped on the way). */
  top(live: Map<number, number>): [number, number] | undefined {
    while (this.at.length > 0 && live.get(this.keys[0]) !== this.at[0]) this.pop();
    return this.at.length > 0 ? [this.at[0], this.keys[0]] : undefined;
  }

  pop(): void {
    const at = this.at.pop() as number;
    const key = this.keys.pop() as number;
    const n = this.at.length;
    if (n === 0) return;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const c = l + 1 < n && this.at[l + 1] > this.at[l] ? l + 1 : l;
      if (this.at[c] <= at) break;
      this.at[i] = this.at[c];
      this.keys[i] = this.keys[c];
      i = c;
    }
    this.at[i] = at;
    this.keys[i] = key;
  }
}

export function oracleHits(reqs: readonly FleetRequest[], workers: number, kvTokens: number): OracleHits {
  const blockTokens = reqs[0]?.blockTokens ?? 1;
  const capacity = workers * Math.floor(kvTokens / blockTokens);
  const order = [...reqs].sort((a, b) => a.arrivalMs - b.arrivalMs || a.id - b.id);
  let total = 0;
  for (const r of order) total += r.keys.length;
  const seq = new Int32Array(total);
  let p = 0;
  for (const r of order) for (const k of r.keys) seq[p++] = k;
  // next use of the block accessed at each position (Infinity: never again)
  const next = new Float64Array(total);
  const last = new Map<number, number>();
  for (let i = total - 1; i >= 0; i--) {
    next[i] = last.get(seq[i]) ?? Infinity;
    last.set(seq[i], i);
  }
  const held = new Map<number, number>(); // key → its next use
  const heap = new NextUseHeap();
  let cached = 0;
  let prompt = 0;
  p = 0;
  for (const r of order) {
    let hits = 0;
    for (let b = 0; b < r.keys.length; b++, p++) {
      const k = seq[p];
      const nu = next[p];
      if (held.has(k)) hits++;
      else if (nu === Infinity || capacity === 0) continue;
      else if (held.size >= capacity) {
        const top = heap.top(held) as [number, number];
        if (top[0] <= nu) continue;
        held.delete(top[1]);
        heap.pop();
      }
      held.set(k, nu);
      heap.push(nu, k);
    }
    cached += Math.min(r.inputTokens, hits * r.blockTokens);
    prompt += r.inputTokens;
  }
  return {
    hitRate: prompt > 0 ? cached / prompt : 0,
    cachedTokens: cached,
    promptTokens: prompt,
    capacityBlocks: capacity,
  };
}
