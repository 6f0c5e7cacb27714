// sglang_cache_aware: re-implementation of the SGLang router's cache-aware policy
// (sgl-project/sglang sgl-router, now sgl-model-gateway, src/policies/cache_aware.rs):
//  1. loads = in-flight requests per worker; imbalanced iff (max − min) > balance_abs_threshold
//     AND max > min · balance_rel_threshold → shortest queue (branch `balance`), text still inserted;
//  2. else prefix-match the request text on the shared approximate radix tree; match rate =
//     matched chars / text chars; rate > cache_threshold → that worker (`prefix_match`);
//  3. else the worker with the smallest tree, i.e. most free cache (`smallest_tree`);
//  every pick inserts the text under the chosen worker. Every eviction_interval_secs each worker's
//  tree is cut back to max_tree_size characters, least recently used leaves first.
// Defaults (the values the SGLang router shipped with, sgl-router py_src launch_router.py / router.py
// of 2024–25: cache_threshold 0.50, balance_abs_threshold 32, balance_rel_threshold 1.0001,
// eviction_interval 60 s, max_tree_size 2**24). Later sgl-model-gateway router_args.py defaults are
// 0.3 / 64 / 1.5 / 60 / 2**26, and the Rust CacheAwareConfig::default() is 0.5 / 32 / 1.1 / 30 /
// 10000; pass those as options to compare. The eviction runs lazily inside select (no timer thread).
// Characters are code points, as upstream's Rust chars (an emoji is one, not two UTF-16 units).
// Cost: O(text length) per decision + O(n) load scan.
import { ApproxRadixTree, codePoints } from '../approx-radix-tree.ts';
import { num } from '../policy-options.ts';
import type { Choice, Policy, PolicyOptions, RouteInfo, WorkerView } from '../types.ts';

export const SGLANG_DEFAULTS = {
  cache_threshold: 0.5,
  balance_abs_threshold: 32,
  balance_rel_threshold: 1.0001,
  eviction_interval_secs: 60,
  max_tree_size: 2 ** 24,
} as const;
export const SGLANG_BRANCHES = ['balance', 'prefix_match', 'smallest_tree'] as const;

export class SglangCacheAwarePolicy implements Policy {
  readonly name = 'sglang_cache_aware';
  readonly tree = new ApproxRadixTree();
  private readonly cacheThreshold: number;
  private readonly absThreshold: number;
  private readonly relThreshold: number;
  private readonly evictionMs: number;
  private readonly maxTreeSize: number;
  private lastEviction = -1;

  constructor(opts: PolicyOptions = {}) {
    this.cacheThreshold = num(opts, 'cache_threshold', SGLANG_DEFAULTS.cache_threshold, 0, 1);
    this.absThreshold = num(opts, 'balance_abs_threshold', SGLANG_DEFAULTS.balance_abs_threshold, 0);
    this.relThreshold = num(opts, 'balance_rel_threshold', SGLANG_DEFAULTS.balance_rel_threshold, 0);
    this.evictionMs = num(opts, 'eviction_interval_secs', SGLANG_DEFAULTS.eviction_interval_secs, 0) * 1000;
    this.maxTreeSize = num(opts, 'max_tree_size', SGLANG_DEFAULTS.max_tree_size, 1);
  }

  /** One eviction cycle now (what SGLang's background thread does every interval). */
  evict(now: number = Date.now()): number {
    this.lastEviction = now;
    return this.tree.evictBySize(this.maxTreeSize);
  }

  /** The worker's cache was flushed: its text leaves the approximate tree. */
  forgetWorker(workerId: string): void {
    this.tree.removeTenant(workerId);
  }

  select(workers: readonly WorkerView[], info: RouteInfo): Choice | null {
    if (workers.length === 0) return null;
    const now = info.nowMs ?? Date.now();
    if (this.lastEviction < 0) this.lastEviction = now;
    if (this.evictionMs > 0 && now - this.lastEviction >= this.evictionMs) this.evict(now);
    // the tenant's cache salt leads, so the tree is per tenant like the workers' caches
    const text = info.cacheSalt ? `${info.cacheSalt}\u0000${info.text ?? ''}` : (info.text ?? '');
    let min = workers[0];
    let maxLoad = workers[0].inFlight;
    for (const w of workers) {
      if (w.inFlight < min.inFlight) min = w;
      if (w.inFlight > maxLoad) maxLoad = w.inFlight;
    }
    const imbalanced = maxLoad - min.inFlight > this.absThreshold && maxLoad > min.inFlight * this.relThreshold;
    if (imbalanced) return this.pick(min, 'balance', text, info, this.tree.matchFor(text, min.id));

    const ids = new Set(workers.map((w) => w.id));
    const m = this.tree.prefixMatch(text, ids);
    const rate = text.length === 0 ? 0 : m.matchedChars / codePoints(text);
    if (rate > this.cacheThreshold && m.tenant !== undefined) {
      const w = workers.find((x) => x.id === m.tenant)!;
      return this.pick(w, 'prefix_match', text, info, m.matchedChars);
    }
    let smallest = workers[0];
    for (const w of workers) if (this.tree.size(w.id) < this.tree.size(smallest.id)) smallest = w;
    return this.pick(smallest, 'smallest_tree', text, info, this.tree.matchFor(text, smallest.id));
  }

  expectedCachedTokens(workers: readonly WorkerView[], info: RouteInfo): number {
    const text = info.text ?? '';
    if (workers.length === 0 || text.length === 0) return 0;
    const chars = codePoints(text);
    const tokens = info.promptTokens ?? info.promptTokenIds?.length ?? 0;
    let sum = 0;
    for (const w of workers) sum += Math.floor((tokens * this.tree.matchFor(text, w.id)) / chars);
    return sum / workers.length;
  }

  /** Each worker's cached tokens of the prompt (the values expectedCachedTokens([w]) gives), one code-point count. */
  cachedTokensEach(workers: readonly WorkerView[], info: RouteInfo, out: number[]): void {
    out.length = workers.length;
    const text = info.text ?? '';
    if (text.length === 0) {
      out.fill(0);
      return;
    }
    const chars = codePoints(text);
    const tokens = info.promptTokens ?? info.promptTokenIds?.length ?? 0;
    for (let i = 0; i < workers.length; i++)
      out[i] = Math.floor((tokens * this.tree.matchFor(text, workers[i].id)) / chars);
  }

  private pick(w: WorkerView, branch: string, text: string, info: RouteInfo, matchedChars: number): Choice {
    this.tree.insert(text, w.id);
    const tokens = info.promptTokens ?? info.promptTokenIds?.length ?? 0;
    const predicted = text.length === 0 ? 0 : Math.floor((tokens * matchedChars) / codePoints(text));
    return { worker: w, branch, predictedCachedTokens: predicted };
  }
}
