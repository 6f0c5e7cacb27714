// ctxgate's settings and their defaults (the policy's options, validated by its constructor), and
// the names of its branches (a bounded metric label). How they were chosen: the opening comment
// of ctxgate.ts.
import { DEFAULT_BLOCK_SIZE } from '../block-hash.ts';

/** Longest session_ttl_s accepted (30 days): a pin outliving any agent run is pointless, and a huge
 *  value would make Redis refuse the shared home's expiry (sessions then silently not shared). */
export const MAX_SESSION_TTL_S = 2_592_000;

export const CTXGATE_DEFAULTS = {
  /** load bound: no worker above (1+ε)·mean + 1 requests in flight (a session's home up to
   *  sticky_slack more). Under a long queue a cache
   *  hit saves work for every request behind it, while the queues even out again through the
   *  calls that match nothing; a tight bound (0.25) sent conversations' next turns elsewhere */
  epsilon: 0.75,
  /** ...and in front of SGLang engines (option engine_flavor 'sglang'): SGLang schedules its queue
   *  longest-prefix-match first, so a worker holding many conversations keeps taking their turns
   *  ahead of its queue, and at 0.75 the busiest of 16 workers held up to 1.37× the mean requests.
   *  Conversation half, 16 workers, `--engine sglang`, ×1.9–×2.1 in steps of 0.02 (11 rates,
   *  virtual-time fleet simulator): ε 0.75 imbalance mean 1.28 / max 1.37, p90 TTFT 0.83× the best
   *  baseline's (geometric mean); ε 0.5 1.20 / 1.27, 0.86×. 8 workers: ×0.95–×1.05 (step 0.01)
   *  0.95× → 0.89×, ×1.9–×2.1 1.00× → 1.00×; agent recordings (50k KV, --rate 2, seed 1) p90
   *  13.3 → 11.1 s, hit 47 → 61 %. Only 0.75 and 0.5 were compared (the vLLM models keep 0.75). */
  epsilon_sglang: 0.5,
  block_size: DEFAULT_BLOCK_SIZE,
  /** prefill throughput per worker, tokens/s (a number, or {workerId: n, default: n}) */
  prefill_tokens_per_s: 10_000,
  /** model hidden size for the attention term; 0 = linear prefill model */
  hidden_size: 0,
  /** expected slowdown per request already running on the worker (shared batch), ms */
  inflight_penalty_ms: 2,
  /** seconds a worker takes to free a KV cache's worth of blocks (running requests finishing);
   *  a prompt that does not fit the KV left after what is queued there waits its share of that
   *  (vLLM admits a prompt only when all its blocks are free). 0 = ignore KV pressure */
  kv_pressure_s: 100,
  /** in-flight requests a pinned session's home may take beyond the load bound while it is
   *  still the faster place to start (its cache beats the detour's re-prefill); 0 = hard bound */
  sticky_slack: 2,
  /** tokens a worker must hold beyond the shared root for prefix_match */
  min_unique_tokens: 64,
  /** index every Nth block of the chain (N·block_size tokens of depth resolution): an
   *  overflowing session copies its chain into another worker's entry, and that copy is the
   *  slowest step of a decision; 4 × 16 = 64-token resolution is plenty for routing */
  index_stride: 4,
  /** seconds a session's pin lives unused (locally, and as its shared home's Redis expiry) */
  session_ttl_s: 900,
  /** the approximate index remembers this many times a worker's KV capacity: prompts still
   *  queued or running (often minutes under load) hold their blocks, which an LRU sized to the
   *  cache alone would already have forgotten when the conversation's next turn arrives */
  index_capacity_factor: 4,
  /** ...and this many in front of SGLang engines (option engine_flavor 'sglang', which the gateway
   *  sets from the model's flavor): SGLang schedules its queue longest-prefix-match first, so a
   *  turn routed behind a long queue to the worker holding its history is still served it there,
   *  and an index that forgot the history sent it elsewhere (conversation half, `--engine sglang`,
   *  ×1: 175 s / 14.2 % at 4, 160 s / 16.7 % at 8, 156 s / 16.5 % at 16; smg_cache_aware 161.5 s /
   *  16.3 %) */
  index_capacity_factor_sglang: 8,
  /** ...but only as far as the work queued there holds blocks: the index remembers the worker's
   *  KV plus this many times its queued prefill tokens (capped by index_capacity_factor). An idle
   *  worker holds its KV's worth and no more: an agent session's home whose sessions outgrow its
   *  KV loses their histories between calls (50k-KV recordings: the index kept listing them, the
   *  sessions stayed and re-prefilled, p90 13.9 s; at 2, 6.0 s) */
  index_queue_factor: 2,
  /** ...and this many for calls without a session id (blended by their share of recent calls).
   *  Without a session the index is the only memory that finds a conversation's next turn, and a
   *  turn sent to a worker that has meanwhile dropped its chain misses no more than it would
   *  elsewhere; with one the pin finds it, and an index listing dropped histories keeps sessions
   *  on homes that re-prefill them. Mooncake conversation half (no session ids): 2 → 8 lifts the
   *  hit rate ~0.3 points and p90 at ×1 and 16 workers; the agent recordings see 2 as before.
   *  Behind the gateway only calls with no session id reach the policy without one: /v1/completions
   *  without a session header (chat, messages and responses calls get a derived id,
   *  middleware/layout/session-id.ts). The share is one average over all tenants, so one tenant's
   *  such calls enlarge the index for every tenant's calls, up to this factor (a shared LRU). */
  index_queue_factor_no_session: 8,
  /** KV capacity in tokens when a worker reports none */
  default_kv_tokens: 1_048_576,
} as const;

export const CTXGATE_BRANCHES = ['sticky', 'overflow', 'migrate', 'prefix_match', 'new_session', 'balance'] as const;
export type CtxgateBranch = (typeof CTXGATE_BRANCHES)[number];
