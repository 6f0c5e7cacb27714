// Shapes shared by the routing policies and the gateway. A Policy is pure: select(workers, info)
// with no I/O; state it learns (indexes, affinity) comes in through `info` or its own memory.

export interface WorkerView {
  /** Stable id (`w<index>` in its model unless configured; never the address). */
  id: string;
  url: string;
  healthy: boolean;
  /** Requests the gateway has in flight on this worker now. */
  inFlight: number;
  /** Of those, the ones that have not answered a first byte yet (the rest are answering: the
   *  engine is decoding them, or has finished and the gateway is still relaying or storing). */
  awaitingFirstByte?: number;
  /** Prompt tokens the gateway predicts this worker still has to prefill (queued + running). */
  queuedPrefillTokens: number;
  /** Configured max in-flight (0 = unlimited). */
  maxInFlight: number;
  /** KV capacity in tokens, when configured or scraped. */
  kvTokens?: number;
  /** Scraped engine signals, when scraping is on. */
  engine?: { waiting?: number; running?: number; kvUsage?: number };
}

export interface RouteInfo {
  model: string;
  tenant: string;
  /** Prefix-cache namespace of the request (the tenant's cache_salt); chains and keys derived
   *  here from ids or text are seeded with it, as the middleware's block hashes are. */
  cacheSalt?: string;
  sessionId?: string;
  /** The prompt as text (for text-based baselines such as the SGLang router). */
  text?: string;
  /** A number[] or the pipeline's packed Uint32Array. */
  promptTokenIds?: ArrayLike<number>;
  /** vLLM-style block hash chain of the prompt (hex), from the middleware. */
  blockHashes?: readonly string[];
  /** blockHashes' 64-bit keys (kvplanner/hash-keys.ts: [low, high] per block, aligned), made where
   *  the hashes are made: a policy's index lookups read them instead of the strings (the same
   *  answers, fewer cache misses). Must be hashKeys(blockHashes) when given; ignored without them. */
  blockKeys?: Int32Array;
  promptTokens?: number;
  /** Clock for time-based state (session TTLs, eviction intervals), ms; Date.now() when absent.
   *  The fleet simulator sets its virtual time here. */
  nowMs?: number;
  /** Lets a policy do long index work after select() returns, in steps: `step` does a bounded
   *  share of it and returns true once none is left; the caller calls it again until then (the
   *  gateway: once per turn of its event loop, so a 240k-token prompt's ~4k new routing blocks
   *  never hold the loop at once). Absent (the fleet simulator, tests): all at once, as before. */
  defer?: (step: () => boolean) => void;
  /** Runs `run` once the request's body went upstream (now when it already has, or never will):
   *  a policy may leave index work of its decision for then (deferred-work.ts postpone), done
   *  before anything else reads or writes its index. Absent: such work is done in select(). */
  sent?: (run: () => void) => void;
}

export interface Choice {
  worker: WorkerView;
  /** Which branch of the policy decided (bounded set per policy; used as a metric label). */
  branch: string;
  /** Tokens the policy expects the worker to serve from cache. */
  predictedCachedTokens?: number;
}

export interface RouteFeedback {
  workerId: string;
  info: RouteInfo;
  reportedCachedTokens?: number;
  promptTokens?: number;
  ok: boolean;
  /** The Choice's predictedCachedTokens, when the policy cannot match the feedback to its pick. */
  predictedCachedTokens?: number;
}

export interface Policy {
  readonly name: string;
  /** Pick one of `workers` (already filtered to healthy, not excluded); null when none fits. */
  select(workers: readonly WorkerView[], info: RouteInfo): Choice | null;
  /** Learn from what happened (cache index updates, feedback correction). */
  observe?(feedback: RouteFeedback): void;
  /** The worker dropped its whole prefix cache (an admin flush_cache): what the policy's own index
   *  holds for it goes, so its predictions there start from nothing. A precise index (engine KV
   *  events) learns it from the engine's AllBlocksCleared instead. */
  forgetWorker?(workerId: string): void;
  /** Cached tokens a uniformly chosen one of `workers` would hold of this prompt, by the policy's
   *  index (savings attribution: what routing added beyond chance). Read-only; absent without an index. */
  expectedCachedTokens?(workers: readonly WorkerView[], info: RouteInfo): number;
  /** Each of `workers`' cached tokens of this prompt into `out` (aligned; the values
   *  expectedCachedTokens([w]) gives one at a time), reading the prompt's chain once. Read-only. */
  cachedTokensEach?(workers: readonly WorkerView[], info: RouteInfo, out: number[]): void;
  /** In-memory statistics (index size, evictions, predicted vs reported cached tokens). */
  stats?(): object;
  /** Finishes index work a decision left for later (RouteInfo.defer), now: before the gateway
   *  stops sharing its index with replicas, so no chain is left half-recorded or unpublished. */
  settle?(): void;
}

export interface PolicyOptions {
  /** Free-form per-policy settings from the config (validated by the policy's own factory). */
  [k: string]: unknown;
}
