// prefix_hash: SGLang model gateway's lightweight cache-aware policy (sgl-model-gateway
// src/policies/prefix_hash.rs): hash the first `prefix_token_count` (256) prompt tokens, take the
// consistent-ring owner; if its load > (total+1)/n · load_factor (1.25) take the least loaded
// worker that passes that check, else the ring owner anyway. O(prefix) hash + O(log(n·v)) + O(n).
// Without token ids it hashes the first 1024 characters of the text (≈256 tokens).
import { hash32, hashTokens, HashRing } from '../hash-ring.ts';
import { num } from '../policy-options.ts';
import type { Choice, Policy, PolicyOptions, RouteInfo, WorkerView } from '../types.ts';

/** sgl-model-gateway PrefixHashConfig::default(): prefix_token_count 256, load_factor 1.25. */
export const DEFAULT_PREFIX_TOKENS = 256;
export const DEFAULT_LOAD_FACTOR = 1.25;
const CHARS_PER_TOKEN = 4;
export const PREFIX_HASH_BRANCHES = ['ring_hit', 'load_balance_walk', 'fallback_least_load'] as const;

export class PrefixHashPolicy implements Policy {
  readonly name = 'prefix_hash';
  private readonly prefixTokens: number;
  private readonly loadFactor: number;
  private readonly ring: HashRing;

  constructor(opts: PolicyOptions = {}) {
    this.prefixTokens = num(opts, 'prefix_token_count', DEFAULT_PREFIX_TOKENS, 1);
    this.loadFactor = num(opts, 'load_factor', DEFAULT_LOAD_FACTOR, 1);
    this.ring = new HashRing(num(opts, 'vnodes', 160, 1, 10_000));
  }

  private loadOk(load: number, total: number, n: number): boolean {
    if (total === 0 || n === 0) return true;
    return load <= ((total + 1) / n) * this.loadFactor;
  }

  select(workers: readonly WorkerView[], info: RouteInfo): Choice | null {
    const n = workers.length;
    if (n === 0) return null;
    let total = 0;
    for (const w of workers) total += w.inFlight;
    let key: number | undefined;
    if (info.promptTokenIds && info.promptTokenIds.length > 0) key = hashTokens(info.promptTokenIds, this.prefixTokens);
    else if (info.text) key = hash32(info.text.slice(0, this.prefixTokens * CHARS_PER_TOKEN));
    // a tenant's salt moves its ring position: equal prefixes of two tenants land independently
    if (key !== undefined && info.cacheSalt) key = (key ^ hash32(info.cacheSalt)) >>> 0;
    const leastLoaded = (filter: (w: WorkerView) => boolean): WorkerView | undefined => {
      let best: WorkerView | undefined;
      for (const w of workers) if (filter(w) && (!best || w.inFlight < best.inFlight)) best = w;
      return best;
    };
    if (key === undefined) return { worker: leastLoaded(() => true)!, branch: 'fallback_least_load' };
    const home = this.ring.home(workers, key)!;
    if (this.loadOk(home.inFlight, total, n)) return { worker: home, branch: 'ring_hit' };
    const alt = leastLoaded((w) => this.loadOk(w.inFlight, total, n));
    return { worker: alt ?? home, branch: 'load_balance_walk' };
  }
}
