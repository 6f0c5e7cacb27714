// smg_cache_aware: today's SGLang model gateway cache-aware policy, re-implemented from
// lightseekorg/smg model_gateway/src/policies/cache_aware.rs (the sgl-model-gateway successor):
//  1. load = requests in flight per worker; imbalanced iff (max − min) > balance_abs_threshold AND
//     max > min · balance_rel_threshold → the least-loaded worker (`balance`), text still inserted;
//     "least loaded" everywhere is the lowest (load, requests this policy sent there, index) —
//     smg's (load, processed_requests, idx) tie-break (smg #1714), which spreads misses over
//     equally idle workers instead of sending them all to the first;
//  2. approximate mode (HTTP text): prefix-match the text on the shared char radix tree; match rate
//     = matched ÷ text chars; rate > cache_threshold → the tree's tenant for that prefix
//     (`prefix_match`); else — unlike the 2024 router's smallest tree — the least-loaded worker
//     (`min_load`); every pick inserts the text under the chosen worker;
//  3. event-driven mode (a precise index from engine KV events, option kv_index): the worker with
//     the most overlapping blocks, ties → lower load → smaller tree → the later worker (Rust's
//     max_by_key keeps the last maximum) (`overlap`); no overlap → least-loaded (`min_load`).
// Defaults: the gateway binary's CLI defaults (smg main.rs: --cache-threshold 0.3,
// --balance-abs-threshold 64, --balance-rel-threshold 1.5, --eviction-interval 120,
// --max-tree-size 2^26); CacheAwareConfig::default() in the library is 0.5 / 32 / 1.1 / 30 / 10000.
// Characters are code points (upstream: Rust chars), as in sglang_cache_aware.
// The upstream overload / KV-spread imbalance terms (balance_token_usage_threshold,
// overload_token_usage_threshold) default to 1.0, i.e. off, and are not modelled.
// Cost: O(text) per decision (approximate) or O(n log b) (event-driven) + O(n) load scan.
import { ApproxRadixTree, codePoints } from '../approx-radix-tree.ts';
import { preciseIndexOption, type KvEventIndex } from '../kv-events/event-index.ts';
import { num } from '../policy-options.ts';
import type { Choice, Policy, PolicyOptions, RouteInfo, WorkerView } from '../types.ts';

export const SMG_DEFAULTS = {
  cache_threshold: 0.3,
  balance_abs_threshold: 64,
  balance_rel_threshold: 1.5,
  eviction_interval_secs: 120,
  max_tree_size: 2 ** 26,
  block_size: 16,
} as const;
export const SMG_BRANCHES = ['balance', 'prefix_match', 'overlap', 'min_load'] as const;

export class SmgCacheAwarePolicy implements Policy {
  readonly name = 'smg_cache_aware';
  readonly tree = new ApproxRadixTree();
  private readonly precise: KvEventIndex | undefined;
  private readonly cacheThreshold: number;
  private readonly absThreshold: number;
  private readonly relThreshold: number;
  private readonly evictionMs: number;
  private readonly maxTreeSize: number;
  private readonly blockSize: number;
  private lastEviction = -1;
  /** Picks per worker (smg's processed_requests): the second key of the least-loaded choice. */
  private readonly processed = new Map<string, number>();
  private readonly branches: Record<string, number> = Object.fromEntries(SMG_BRANCHES.map((b) => [b, 0]));

  constructor(opts: PolicyOptions = {}) {
    const d = SMG_DEFAULTS;
    this.cacheThreshold = num(opts, 'cache_threshold', d.cache_threshold, 0, 1);
    this.absThreshold = num(opts, 'balance_abs_threshold', d.balance_abs_threshold, 0);
    this.relThreshold = num(opts, 'balance_rel_threshold', d.balance_rel_threshold, 0);
    this.evictionMs = num(opts, 'eviction_interval_secs', d.eviction_interval_secs, 0) * 1000;
    this.maxTreeSize = num(opts, 'max_tree_size', d.max_tree_size, 1);
    this.blockSize = num(opts, 'block_size', d.block_size, 1);
    this.precise = preciseIndexOption(opts);
  }

  /** The worker's cache was flushed: its text leaves the approximate tree. */
  forgetWorker(workerId: string): void {
    this.tree.removeTenant(workerId);
  }

  select(workers: readonly WorkerView[], info: RouteInfo): Choice | null {
    if (workers.length === 0) return null;
    const now = info.nowMs ?? Date.now();
    if (this.lastEviction < 0) this.lastEviction = now;
    if (this.evictionMs > 0 && now - this.lastEviction >= this.evictionMs) {
      this.lastEviction = now;
      this.tree.evictBySize(this.maxTreeSize);
    }
    // the tenant's cache salt leads, so the tree is per tenant like the workers' caches
    const text = info.cacheSalt ? `${info.cacheSalt}\u0000${info.text ?? ''}` : (info.text ?? '');
    let min = workers[0];
    let minDone = this.processed.get(min.id) ?? 0;
    let maxLoad = workers[0].inFlight;
    for (const w of workers) {
      const done = this.processed.get(w.id) ?? 0;
      if (w.inFlight < min.inFlight || (w.inFlight === min.inFlight && done < minDone)) {
        min = w;
        minDone = done;
      }
      if (w.inFlight > maxLoad) maxLoad = w.inFlight;
    }
    const imbalanced = maxLoad - min.inFlight > this.absThreshold && maxLoad > min.inFlight * this.relThreshold;
    if (imbalanced) return this.pick(min, 'balance', info, text);

    if (this.precise && info.blockHashes) {
      const hashes = info.blockHashes;
      let best: WorkerView | undefined;
      let bestDepth = 0;
      for (const w of workers) {
        const d = this.precise.index.matchLength(w.id, hashes);
        if (d === 0) continue;
        if (
          !best ||
          d > bestDepth ||
          (d === bestDepth &&
            (w.inFlight < best.inFlight ||
              (w.inFlight === best.inFlight && this.precise.index.size(w.id) <= this.precise.index.size(best.id))))
        ) {
          best = w;
          bestDepth = d;
        }
      }
      if (best) return this.pick(best, 'overlap', info, text, bestDepth * this.blockSize);
      return this.pick(min, 'min_load', info, text);
    }

    const ids = new Set(workers.map((w) => w.id));
    const m = this.tree.prefixMatch(text, ids);
    const rate = text.length === 0 ? 0 : m.matchedChars / codePoints(text);
    if (rate > this.cacheThreshold && m.tenant !== undefined) {
      return this.pick(workers.find((x) => x.id === m.tenant)!, 'prefix_match', info, text);
    }
    return this.pick(min, 'min_load', info, text);
  }

  private pick(w: WorkerView, branch: string, info: RouteInfo, text: string, cachedTokens?: number): Choice {
    const tokens = info.promptTokens ?? info.promptTokenIds?.length ?? 0;
    let predicted = cachedTokens;
    if (predicted === undefined) {
      if (this.precise)
        predicted = info.blockHashes ? this.precise.index.matchLength(w.id, info.blockHashes) * this.blockSize : 0;
      else predicted = text.length === 0 ? 0 : Math.floor((tokens * this.tree.matchFor(text, w.id)) / codePoints(text));
    }
    if (!this.precise) this.tree.insert(text, w.id);
    this.processed.set(w.id, (this.processed.get(w.id) ?? 0) + 1);
    this.branches[branch]++;
    return { worker: w, branch, predictedCachedTokens: Math.min(predicted, tokens) };
  }

  stats(): object {
    return { branches: { ...this.branches } };
  }
}
