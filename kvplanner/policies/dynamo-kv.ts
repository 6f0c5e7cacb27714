// dynamo_kv: NVIDIA Dynamo's KV router cost, re-implemented from ai-dynamo/dynamo
// lib/llm/src/kv_router (scheduler / selector.rs DefaultWorkerSelector, sequence.rs):
//   prefill_blocks(w) = (tokens still to prefill on w + request tokens − overlap(w)·block) / block
//   decode_blocks(w)  = blocks of w's active requests + the request's new blocks
//   logit(w)          = overlap_score_weight · prefill_blocks(w) + decode_blocks(w)   (lower wins)
// temperature 0 → the lowest logit, ties → the smaller index footprint, then a seeded random
// pick; temperature > 0 → softmax sampling over the logits normalised to [0, 1] by their range,
// or a uniform pick when every logit is equal (softmax_sample_with_sample in selector.rs).
// overlap(w) = blocks of the prompt's chain w holds from the start: from engine KV events when a
// precise index is given (option kv_index; Dynamo's KvIndexer), else from the router's own
// decisions (Dynamo's ApproxKvIndexer, which records each routed chain on its worker; here
// bounded by the worker's KV capacity instead of its 120 s TTL). Active blocks are counted per
// worker from select() to observe(); "tokens still to prefill" is the gateway's
// queuedPrefillTokens (Dynamo: active prefill tokens until the first token). New blocks are taken
// as the request's blocks minus its overlap (Dynamo subtracts blocks already active there).
// Defaults (docs/router: --kv-overlap-score-weight 1, --router-temperature 0, block size 16,
// the engine's). Cost: O(n log b) index lookups + O(n) per decision.
import { preciseIndexOption, type KvEventIndex } from '../kv-events/event-index.ts';
import { PrefixIndex } from '../prefix-index.ts';
import { num } from '../policy-options.ts';
import { requestChain } from '../request-chain.ts';
import { mulberry32 } from '../rng.ts';
import type { Choice, Policy, PolicyOptions, RouteFeedback, RouteInfo, WorkerView } from '../types.ts';

export const DYNAMO_DEFAULTS = {
  overlap_score_weight: 1,
  temperature: 0,
  block_size: 16,
  seed: 1,
  default_kv_tokens: 1_048_576,
} as const;
export const DYNAMO_BRANCHES = ['kv_cost', 'sampled'] as const;
const MAX_PENDING = 16_384;

export class DynamoKvPolicy implements Policy {
  readonly name = 'dynamo_kv';
  readonly index: PrefixIndex;
  private readonly precise: KvEventIndex | undefined;
  private readonly weight: number;
  private readonly temperature: number;
  private readonly blockSize: number;
  private readonly rand: () => number;
  private readonly activeBlocks = new Map<string, number>();
  private readonly pending = new Map<RouteInfo, { workerId: string; blocks: number }>();
  private readonly logits: number[] = [];

  constructor(opts: PolicyOptions = {}) {
    const d = DYNAMO_DEFAULTS;
    this.weight = num(opts, 'overlap_score_weight', d.overlap_score_weight, 0);
    this.temperature = num(opts, 'temperature', d.temperature, 0);
    this.blockSize = Math.floor(num(opts, 'block_size', d.block_size, 1));
    this.rand = mulberry32(num(opts, 'seed', d.seed));
    this.precise = preciseIndexOption(opts);
    this.index =
      this.precise?.index ??
      new PrefixIndex(Math.floor(num(opts, 'default_kv_tokens', d.default_kv_tokens, 1) / this.blockSize));
  }

  /** logit(w) for a request of `promptTokens` with `overlap` blocks cached on w. */
  logit(w: WorkerView, promptTokens: number, overlap: number): number {
    const bs = this.blockSize;
    const requestBlocks = Math.ceil(promptTokens / bs);
    const prefillTokens = w.queuedPrefillTokens + Math.max(0, promptTokens - overlap * bs);
    const decodeBlocks = (this.activeBlocks.get(w.id) ?? 0) + Math.max(0, requestBlocks - overlap);
    return this.weight * (prefillTokens / bs) + decodeBlocks;
  }

  select(workers: readonly WorkerView[], info: RouteInfo): Choice | null {
    const n = workers.length;
    if (n === 0) return null;
    const { hashes, promptTokens } = requestChain(info, this.blockSize);
    const overlaps = workers.map((w) => {
      if (!this.precise) this.index.prepare(w.id, w.kvTokens ? w.kvTokens / this.blockSize : undefined);
      return this.index.matchLength(w.id, hashes);
    });
    const logits = this.logits;
    logits.length = n;
    let lo = Infinity;
    let hi = -Infinity;
    for (let i = 0; i < n; i++) {
      logits[i] = this.logit(workers[i], promptTokens, overlaps[i]);
      lo = Math.min(lo, logits[i]);
      hi = Math.max(hi, logits[i]);
    }
    let idx: number;
    let branch: string;
    if (this.temperature > 0 && hi === lo) {
      // Dynamo's softmax_sample: equal logits → uniform over all workers (no tree-size tie-break)
      idx = Math.floor(this.rand() * n);
      branch = 'sampled';
    } else if (this.temperature === 0) {
      const ties: number[] = [];
      for (let i = 0; i < n; i++) if (logits[i] === lo) ties.push(i);
      let minSize = Infinity;
      for (const i of ties) minSize = Math.min(minSize, this.index.size(workers[i].id));
      const small = ties.filter((i) => this.index.size(workers[i].id) === minSize);
      idx = small[Math.floor(this.rand() * small.length)];
      branch = 'kv_cost';
    } else {
      // softmax over −normalised logits
      let total = 0;
      const p = logits.map((l) => {
        const e = Math.exp(-((l - lo) / (hi - lo)) / this.temperature);
        total += e;
        return e;
      });
      let r = this.rand() * total;
      idx = n - 1;
      for (let i = 0; i < n; i++)
        if ((r -= p[i]) <= 0) {
          idx = i;
          break;
        }
      branch = 'sampled';
    }
    const w = workers[idx];
    const blocks = Math.ceil(promptTokens / this.blockSize);
    this.activeBlocks.set(w.id, (this.activeBlocks.get(w.id) ?? 0) + blocks);
    if (this.pending.size >= MAX_PENDING) {
      // the oldest pick will never be observed here: its blocks stop counting as active too
      const [oldInfo, old] = this.pending.entries().next().value!;
      this.pending.delete(oldInfo);
      this.activeBlocks.set(old.workerId, Math.max(0, (this.activeBlocks.get(old.workerId) ?? 0) - old.blocks));
    }
    this.pending.set(info, { workerId: w.id, blocks });
    // the approximate indexer learns at routing time, as Dynamo's does
    if (!this.precise && hashes.length > 0) this.index.insert(w.id, hashes, false, overlaps[idx]);
    return { worker: w, branch, predictedCachedTokens: Math.min(overlaps[idx] * this.blockSize, promptTokens) };
  }

  observe(fb: RouteFeedback): void {
    const p = this.pending.get(fb.info);
    if (!p) return;
    this.pending.delete(fb.info);
    this.activeBlocks.set(p.workerId, Math.max(0, (this.activeBlocks.get(p.workerId) ?? 0) - p.blocks));
  }

  /** The worker's cache was flushed: the approximate indexer forgets it (a precise one hears it from events). */
  forgetWorker(workerId: string): void {
    if (!this.precise || this.precise.guessed(workerId)) this.index.clear(workerId, false);
  }

  /** Blocks counted active per worker (picks not yet observed), and those picks. */
  stats(): { activeBlocks: Record<string, number>; pending: number } {
    return { activeBlocks: Object.fromEntries(this.activeBlocks), pending: this.pending.size };
  }
}
