// One simulated vLLM engine (v1 scheduler, vllm/v1/core/sched/scheduler.py) on the fleet
// simulator's virtual clock. Each step:
//  1. running requests first, in order: a prefilling one takes min(remaining, token budget)
//     tokens (chunked prefill), a decoding one 1; each must hold blocks for every token it has
//     computed plus the step's — when the pool runs short, the last running request is preempted
//     (its blocks freed tail first, all progress dropped, back to the front of the queue: vLLM's
//     recompute preemption, `self.running.pop()`), until the request fits or is itself the victim;
//  2. then, unless someone was preempted, waiting requests in FCFS order while budget, blocks and
//     max_num_seqs allow: the longest cached prefix of full blocks counts as computed (never the
//     last token); a request is admitted only when the blocks for its WHOLE prompt (less the hit)
//     are free now (vLLM `scheduler_reserve_full_isl`, default on: `allocate_slots(...,
//     full_sequence_must_fit=True)`), though only its first chunk's are taken; one that does not
//     fit waits and admission stops there. `reserveFullPrompt: false` is the older behaviour
//     (only the first chunk must fit), which over-admits long prompts and thrashes.
// A block is cached under its chain key once the step that fills it is scheduled (vLLM
// cache_blocks up to num_computed + num_new tokens), never while partial.
// step time = max(compute, memory): FLOPs of the step's prefill chunks (2·P per token +
// attention over cached and new keys) and decode tokens over MFU × peak, vs weights + the KV the
// step reads over HBM bandwidth (the reference worker's timing model, one batch at a time).
// The prefix cache is the reference worker's BlockPool (free queue, LRU, tail-first frees).
// Cost per step: O(running + admitted + new blocks).
import { BlockPool, type BlockPoolEvents, type PoolBlock } from '../sim-worker/block-pool.ts';
import { kvBytesPerToken, type TimingModel } from '../sim-worker/timing.ts';
import type { FleetRequest } from './trace.ts';

/** vLLM V1 defaults for online serving: max_num_batched_tokens 8192, max_num_seqs 256. */
export const DEFAULT_MAX_BATCHED_TOKENS = 8192;
export const DEFAULT_MAX_SEQS = 256;

export interface EngineConfig {
  kvTokens: number;
  blockSize: number;
  timing: TimingModel;
  maxBatchedTokens?: number;
  maxSeqs?: number;
  /** vLLM scheduler_reserve_full_isl (default true): admit only when the whole prompt fits. */
  reserveFullPrompt?: boolean;
  events?: BlockPoolEvents<number>;
}

export interface SimRequest {
  req: FleetRequest;
  /** Engine block keys of the full prompt blocks (the chain, re-cut to the engine's block size). */
  keys: number[];
  /** Tokens whose KV exists (prefill progress, then decode). */
  computed: number;
  /** Prefilling (after admission, or again after a preemption) until `target` tokens are computed. */
  prefilling: boolean;
  generated: number;
  blocks: PoolBlock<number>[];
  /** Leading blocks already looked at for caching (cached, or left private as duplicates). */
  keyed: number;
  /** Prompt tokens found cached at first admission (-1 before). */
  cachedTokens: number;
  firstScheduledMs: number;
  firstTokenMs: number;
  finishMs: number;
  prefilled: number;
  preemptions: number;
}

/** What the fleet simulator needs from an engine model (vLLM's here, SGLang's in sglang-engine-model.ts). */
export interface FleetEngine {
  readonly waiting: readonly SimRequest[];
  readonly running: readonly SimRequest[];
  peakUsedBlocks: number;
  preemptions: number;
  prefillTokens: number;
  add(req: FleetRequest): SimRequest;
  step(nowMs: number): StepResult | null;
  kvUsage(): number;
  capacityBlocks(): number;
  cachedBlocks(): number;
}

/** Seconds one step takes: max(compute, memory) over its (request, new tokens) chunks. */
export function stepSeconds(t: TimingModel, kvPerToken: number, chunks: ReadonlyArray<[SimRequest, number]>): number {
  let flops = 0;
  let kvRead = 0;
  for (const [r, n] of chunks) {
    const c = r.computed;
    flops += 2 * t.params * n + 4 * t.layers * t.hidden * n * (c + n / 2);
    kvRead += c + n;
  }
  return Math.max(flops / (t.mfu * t.peakFlops), (t.params * t.weightBytes + kvPerToken * kvRead) / t.bandwidth);
}

export function newSimRequest(req: FleetRequest, keys: number[]): SimRequest {
  return {
    req,
    keys,
    computed: 0,
    prefilling: true,
    generated: 0,
    blocks: [],
    keyed: 0,
    cachedTokens: -1,
    firstScheduledMs: -1,
    firstTokenMs: -1,
    finishMs: -1,
    prefilled: 0,
    preemptions: 0,
  };
}

export interface StepResult {
  durationS: number;
  /** Context tokens (KV) of the requests that decoded a token this step: a token's share of a
   *  step's KV read, to tell how much decode rode in prefill steps (KV-weighted). */
  decodeContext: number;
  /** Requests that produced their first token this step. */
  firstTokens: SimRequest[];
  finished: SimRequest[];
}

/** Engine keys for `req` at `blockSize` (a divisor of the request's block size). */
export function engineKeys(req: FleetRequest, blockSize: number): number[] {
  if (blockSize === req.blockTokens) return Array.from(req.keys);
  if (req.blockTokens % blockSize !== 0)
    throw new Error(`--block-size ${blockSize} must divide the trace's ${req.blockTokens}-token blocks`);
  const per = req.blockTokens / blockSize;
  if (per > 64)
    throw new Error(
      `--block-size ${blockSize} is too small for ${req.blockTokens}-token trace blocks (at most 64 per block)`,
    );
  const out: number[] = [];
  // sub-block j of trace block b: unique per (chain key, j), so chains stay chains
  for (const k of req.keys) for (let j = 0; j < per; j++) out.push(k * 64 + j);
  return out;
}

/**
 * What both engine models share: the queues and counters, a trace request's admission to the
 * queue, and a step's settlement at its end. O(chunks + running) per settlement.
 */
export abstract class EngineBase implements FleetEngine {
  readonly waiting: SimRequest[] = [];
  readonly running: SimRequest[] = [];
  peakUsedBlocks = 0;
  preemptions = 0;
  prefillTokens = 0;
  protected readonly kvPerToken: number;

  constructor(
    readonly blockSize: number,
    protected readonly t: TimingModel,
  ) {
    this.kvPerToken = kvBytesPerToken(t);
  }

  add(req: FleetRequest): SimRequest {
    const r = newSimRequest(req, engineKeys(req, this.blockSize));
    this.waiting.push(r);
    return r;
  }

  /** Tokens a prefill must compute before the request emits its next token (prompt + any output
   *  generated before a preemption, as both engines recompute both). */
  protected target(r: SimRequest): number {
    return r.req.inputTokens + r.generated;
  }

  /** The queue's head `r` joins the running batch: `hit` tokens found cached, `want` computed now. */
  protected schedule(
    r: SimRequest,
    hit: number,
    want: number,
    nowMs: number,
    chunks: Array<[SimRequest, number]>,
  ): void {
    this.waiting.shift();
    r.computed = hit;
    r.prefilling = true;
    if (r.cachedTokens < 0) {
      r.cachedTokens = hit;
      r.firstScheduledMs = nowMs;
    }
    this.running.push(r);
    chunks.push([r, want]);
  }

  /**
   * The step over `chunks` (request, new tokens) from `nowMs`: its time (stepSeconds), then each
   * request advances by its tokens; a prefill counts toward prefillTokens and, once it reaches its
   * target, yields a token, as every decode does. First tokens and finishes are stamped at the
   * step's end; finished requests are released and leave `running`. `prefilled` runs as a
   * request's prefill completes (SGLang caches the prompt then).
   */
  protected settle(
    chunks: ReadonlyArray<[SimRequest, number]>,
    nowMs: number,
    prefilled?: (r: SimRequest) => void,
  ): StepResult {
    const durationS = stepSeconds(this.t, this.kvPerToken, chunks);
    const endMs = nowMs + durationS * 1000;
    const firstTokens: SimRequest[] = [];
    const finished: SimRequest[] = [];
    let decodeContext = 0;
    for (const [r, n] of chunks) {
      if (!r.prefilling) decodeContext += r.computed;
      r.computed += n;
      if (r.prefilling) {
        this.prefillTokens += n;
        r.prefilled += n;
        if (r.computed < this.target(r)) continue; // more chunks to go
        r.prefilling = false;
        prefilled?.(r);
      }
      r.generated++;
      if (r.firstTokenMs < 0) {
        r.firstTokenMs = endMs;
        firstTokens.push(r);
      }
      if (r.generated >= r.req.outputTokens) {
        r.finishMs = endMs;
        finished.push(r);
      }
    }
    if (finished.length > 0) {
      for (const r of finished) this.release(r);
      const done = new Set(finished);
      let k = 0;
      for (const r of this.running) if (!done.has(r)) this.running[k++] = r;
      this.running.length = k;
    }
    return { durationS, decodeContext, firstTokens, finished };
  }

  /** Frees what a finished (or preempted) request holds. */
  protected abstract release(r: SimRequest): void;
  abstract step(nowMs: number): StepResult | null;
  abstract kvUsage(): number;
  abstract capacityBlocks(): number;
  abstract cachedBlocks(): number;
}

export class EngineModel extends EngineBase {
  readonly pool: BlockPool<number>;
  private readonly budget: number;
  private readonly maxSeqs: number;
  private readonly reserveFull: boolean;

  constructor(cfg: EngineConfig) {
    super(cfg.blockSize, cfg.timing);
    this.pool = new BlockPool<number>(Math.max(1, Math.floor(cfg.kvTokens / cfg.blockSize)), cfg.events);
    this.budget = cfg.maxBatchedTokens ?? DEFAULT_MAX_BATCHED_TOKENS;
    this.maxSeqs = cfg.maxSeqs ?? DEFAULT_MAX_SEQS;
    this.reserveFull = cfg.reserveFullPrompt ?? true;
  }

  idle(): boolean {
    return this.waiting.length === 0 && this.running.length === 0;
  }

  /** Blocks for `tokens` tokens of `r`: all or none; the prompt blocks they fill get cached. */
  private ensure(r: SimRequest, tokens: number): boolean {
    const need = Math.ceil(tokens / this.blockSize) - r.blocks.length;
    if (need > 0) {
      if (need > this.pool.availableBlocks()) return false;
      for (let i = 0; i < need; i++) r.blocks.push(this.pool.allocate()!);
      const used = this.pool.usedBlocks();
      if (used > this.peakUsedBlocks) this.peakUsedBlocks = used;
    }
    // a full prompt block is cached under its key unless another request cached it first
    const full = Math.min(Math.floor(tokens / this.blockSize), r.keys.length);
    for (; r.keyed < full; r.keyed++) this.pool.promote(r.blocks[r.keyed], r.keys[r.keyed]);
    return true;
  }

  protected release(r: SimRequest): void {
    for (let i = r.blocks.length - 1; i >= 0; i--) this.pool.unref(r.blocks[i]);
    r.blocks = [];
    r.keyed = 0;
  }

  /** Refs the longest cached prefix (never covering the last token to compute). */
  private matchPrefix(r: SimRequest): number {
    const limit = Math.floor((this.target(r) - 1) / this.blockSize);
    let n = 0;
    while (n < r.keys.length && n < limit) {
      const b = this.pool.get(r.keys[n]);
      if (!b) break;
      this.pool.ref(b);
      r.blocks.push(b);
      n++;
    }
    r.keyed = n;
    return n * this.blockSize;
  }

  private preempt(r: SimRequest): void {
    this.release(r);
    r.computed = 0;
    r.prefilling = true;
    r.preemptions++;
    this.preemptions++;
    this.waiting.unshift(r);
  }

  /** Runs one step starting at `nowMs`; null when there is nothing to run. */
  step(nowMs: number): StepResult | null {
    let budget = this.budget;
    const chunks: Array<[SimRequest, number]> = [];
    let preempted = false;
    for (let i = 0; i < this.running.length && budget > 0; ) {
      const r = this.running[i];
      const want = r.prefilling ? Math.min(this.target(r) - r.computed, budget) : 1;
      let fits = this.ensure(r, r.computed + want);
      while (!fits) {
        const victim = this.running.pop()!;
        this.preempt(victim);
        preempted = true;
        if (victim === r) break;
        fits = this.ensure(r, r.computed + want);
      }
      if (!fits) break;
      chunks.push([r, want]);
      budget -= want;
      i++;
    }
    while (!preempted && budget > 0 && this.waiting.length > 0 && this.running.length < this.maxSeqs) {
      const r = this.waiting[0];
      const hit = this.matchPrefix(r);
      const want = Math.min(this.target(r) - hit, budget);
      const fullNeed = Math.ceil(this.target(r) / this.blockSize) - r.blocks.length;
      if ((this.reserveFull && fullNeed > this.pool.availableBlocks()) || !this.ensure(r, hit + want)) {
        this.release(r);
        break;
      }
      this.schedule(r, hit, want, nowMs, chunks);
      budget -= want;
    }
    if (chunks.length === 0) return null;

    return this.settle(chunks, nowMs);
  }

  kvUsage(): number {
    return this.pool.usedBlocks() / this.pool.capacity;
  }

  capacityBlocks(): number {
    return this.pool.capacity;
  }

  cachedBlocks(): number {
    return this.pool.cachedBlocks();
  }
}
