// ctxgate's settings and their defaults (the policy's options, validated by its constructor), and
// the names of its branches (a bounded metric label). What each setting does: ctxgate.ts's opening
// comment and the notes below. How they were chosen: index_capacity_factor 4 and kv_pressure_s
// 100 with the fleet simulator (Mooncake conversation half, 8 workers, 200k and 1M KV tokens, rate
// ×1 and ×2; sweep over factor 1/2/4/8/16/32, kv_pressure_s 0/10/30/100/200/300, ε 0.1–1): p90
// TTFT moved within ±5 % among the settings past factor 2, hit rate 4.9 % → 5.6–6.3 %.
// ε 0.75 was chosen on the same trace at rates next to the targets, not at them (×0.9, 0.95,
// 1.05, 1.1 and ×1.8, 1.9, 2.1, 2.2; ε 0.25/0.5/0.75/1/1.5, once calls without a session follow
// a history only one worker holds): p90 ÷ the best baseline's 0.957 and 0.996 (geometric mean)
// vs 1.023 and 0.998 at 0.25, hit rate +0.2–0.4 points; checked at ×1 and ×2, on the Mooncake
// synthetic trace (within the noise of ε 0.25–1) and the agent recordings (unchanged p90).
// index_queue_factor 2 (of 1/2/4/8/16): the agent recordings at 50k KV (p90 13.9 → 6.0 s, seed 1;
// 7.7 s over seeds 1–5) with the conversation half at its neighbouring rates unchanged (0.954 vs
// 0.957; 4 and 8 gave 0.977 and 0.959).
// index_queue_factor_no_session 8 (of 2/4/8/16, on the second-chance index): calls without a
// session id (the conversation half has none) at ×0.95/1/1.05, ×1.9/2/2.1 and 16 workers ×2/×4:
// p90 ÷ best baseline 0.974 → 0.935 (×1 band), 0.996 → 0.992 (×2 band), 0.945 → 0.865 (16
// workers), hit Δ to the best baseline −0.70 → −0.38 points (4: 0.955/0.997/0.849/−0.46; 16:
// 0.957/0.989/0.883/−0.47); the recordings, all with sessions, keep factor 2 (identical output).
// Those figures are bench fleet's (Mooncake requests carry no session); in the gateway only
// /v1/completions without a session header reaches the policy without a session id (chat,
// messages and responses calls get a derived one, middleware/layout/session-id.ts), and the share
// is one average over all tenants: it sizes the shared index for everyone (bounded by the factor).
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
