// llmd_precise: llm-d's inference scheduler with its precise prefix-cache profile, re-implemented
// from llm-d/llm-d-inference-scheduler deploy/config/epp-precise-prefix-cache-config.yaml and the
// scorers it names (Gateway API Inference Extension scorer plugins, llm-d-kv-cache-manager):
//   precise-prefix-cache-scorer  weight 2: blocks of the prompt each pod holds from the start (its
//                                 KV-event index) ÷ the prompt's blocks, clipped to [0, 1] (the
//                                 precise prefix-cache scorer's absoluteScoredPods in the
//                                 scheduler's preciseprefixcache package; that absolute score
//                                 replaced min-max, which gave a pod 1.0 for one block more than
//                                 the rest — e.g. a shared first block — so the prefix weight
//                                 outvoted queue and KV usage and piled traffic onto a few pods)
//   kv-cache-utilization-scorer  weight 1: 1 − KV cache usage
//   queue-scorer                 weight 1: min-max normalised waiting queue, inverted (all equal → 1)
//   max-score-picker: the highest weighted sum, ties → random (seeded).
// The prefix index is the engines' KV events when a precise index is given (option kv_index);
// without one the scorer falls back to what the scheduler itself routed (the approximate
// prefix-cache plugin), bounded by each pod's KV capacity. Queue and usage come from the scraped
// engine signals (vllm:num_requests_waiting, vllm:kv_cache_usage_perc).
// Defaults: the weights above; block size 64 in that config (set block_size to the engine's).
// One known difference: the index takes a held chain key to stand for its whole prefix, so a pod
// holding blocks 0 and 2 but not 1 matches 3 where llm-d's walk stops at the gap (1). Engines do
// not produce that from ordered events (a parent is evicted after its children); it needs a lost
// event. Each scorer and the profile are checked against llm-d's own test cases by name.
// Cost: O(n log b) index lookups + O(n) per decision.
import { preciseIndexOption, type KvEventIndex } from '../kv-events/event-index.ts';
import { PrefixIndex } from '../prefix-index.ts';
import { num } from '../policy-options.ts';
import { requestChain } from '../request-chain.ts';
import { mulberry32 } from '../rng.ts';
import type { Choice, Policy, PolicyOptions, RouteInfo, WorkerView } from '../types.ts';

export const LLMD_DEFAULTS = {
  prefix_weight: 2,
  kv_usage_weight: 1,
  queue_weight: 1,
  block_size: 64,
  seed: 1,
  default_kv_tokens: 1_048_576,
} as const;
export const LLMD_BRANCHES = ['max_score'] as const;

/** Min-max normalisation as llm-d's queue scorer does it: all equal → 1 each (neutral). */
export function minMax(values: readonly number[], invert: boolean): number[] {
  let lo = Infinity;
  let hi = -Infinity;
  for (const v of values) {
    lo = Math.min(lo, v);
    hi = Math.max(hi, v);
  }
  return values.map((v) => (hi === lo ? 1 : invert ? (hi - v) / (hi - lo) : (v - lo) / (hi - lo)));
}

export class LlmdPrecisePolicy implements Policy {
  readonly name = 'llmd_precise';
  readonly index: PrefixIndex;
  private readonly precise: KvEventIndex | undefined;
  private readonly wPrefix: number;
  private readonly wKv: number;
  private readonly wQueue: number;
  private readonly blockSize: number;
  private readonly rand: () => number;

  constructor(opts: PolicyOptions = {}) {
    const d = LLMD_DEFAULTS;
    this.wPrefix = num(opts, 'prefix_weight', d.prefix_weight, 0);
    this.wKv = num(opts, 'kv_usage_weight', d.kv_usage_weight, 0);
    this.wQueue = num(opts, 'queue_weight', d.queue_weight, 0);
    this.blockSize = Math.floor(num(opts, 'block_size', d.block_size, 1));
    this.rand = mulberry32(num(opts, 'seed', d.seed));
    this.precise = preciseIndexOption(opts);
    this.index =
      this.precise?.index ??
      new PrefixIndex(Math.floor(num(opts, 'default_kv_tokens', d.default_kv_tokens, 1) / this.blockSize));
  }

  /** Weighted score of every worker (higher wins); `total`: the prompt's blocks. */
  scores(workers: readonly WorkerView[], depths: readonly number[], total: number): number[] {
    const prefix = depths.map((d) => (total > 0 && d > 0 ? Math.min(1, d / total) : 0));
    const queue = minMax(
      workers.map((w) => w.engine?.waiting ?? 0),
      true,
    );
    return workers.map(
      (w, i) => this.wPrefix * prefix[i] + this.wKv * (1 - (w.engine?.kvUsage ?? 0)) + this.wQueue * queue[i],
    );
  }

  select(workers: readonly WorkerView[], info: RouteInfo): Choice | null {
    const n = workers.length;
    if (n === 0) return null;
    const { hashes, promptTokens } = requestChain(info, this.blockSize);
    const depths = workers.map((w) => {
      if (!this.precise) this.index.prepare(w.id, w.kvTokens ? w.kvTokens / this.blockSize : undefined);
      return this.index.matchLength(w.id, hashes);
    });
    const s = this.scores(workers, depths, hashes.length);
    let best = -Infinity;
    for (const x of s) best = Math.max(best, x);
    const ties: number[] = [];
    for (let i = 0; i < n; i++) if (s[i] === best) ties.push(i);
    const idx = ties[Math.floor(this.rand() * ties.length)];
    if (!this.precise && hashes.length > 0) this.index.insert(workers[idx].id, hashes, false, depths[idx]);
    return {
      worker: workers[idx],
      branch: 'max_score',
      predictedCachedTokens: Math.min(depths[idx] * this.blockSize, promptTokens),
    };
  }

  /** The worker's cache was flushed: the approximate index forgets it (a precise one hears it from events). */
  forgetWorker(workerId: string): void {
    if (!this.precise || this.precise.guessed(workerId)) this.index.clear(workerId, false);
  }
}
