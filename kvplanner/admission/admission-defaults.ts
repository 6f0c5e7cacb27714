// Late binding's settings, defined once: the gateway's config schema and the fleet simulator
// read these names.

export interface AdmissionSettings {
  /** A worker can take another call while its engine reports fewer waiting requests than this
   *  (vllm:num_requests_waiting; the gateway adds the calls it sent since the last scrape). */
  max_waiting: number;
  /** ... and its KV usage (vllm:kv_cache_usage_perc, 0–1) is below this. */
  max_kv_usage: number;
  /** Calls the gateway holds over all tenants; beyond it a call is refused at once (503). */
  max_queued: number;
  /** Calls one tenant may have held; beyond it that tenant's call is refused at once (429). */
  max_queued_per_tenant: number;
  /** How long a call may be held before it is refused (503), ms. */
  max_wait_ms: number;
  /** Delay scheduling for locality: a held call whose prompt one worker's cache holds at least
   *  locality_min_tokens of waits up to locality_wait_ms for that worker (0: no waiting for it),
   *  while calls behind it, up to locality_window of its tenant's, may go first elsewhere. */
  locality_wait_ms: number;
  locality_min_tokens: number;
  locality_window: number;
}

/** max_waiting 2: the engine has the next calls at hand when a running one frees its blocks, and
 *  the rest wait where the choice is still open (fleet simulator, Mooncake conversation half, 8
 *  vLLM workers, 200k KV, ×1 / ×2: p90 TTFT 128.1 / 932.7 s at 1, 126.5 / 923.7 at 2, 128.6 /
 *  920.9 at 3). max_kv_usage 0.98: admission is the engine's (the full prompt must fit); the bound
 *  only stops piling onto a worker already full (off entirely: ×1 186 vs 183 s before home-first
 *  dispatch). locality_wait_ms 30 s: 10 s 191.7, 30 s 182.7, 120 s 185.6 (×1, before home-first);
 *  with home-first dispatch, ~0 ms: 150.0 / 951.4 s. locality_min_tokens 1024 (two 512-token
 *  blocks): 512 gave 137.8 vs 128.1 s at ×1.
 *  All of these were chosen on that one trace (the conversation half). On the other Mooncake trace
 *  (synthetic_trace, same fleet, ×1) they give p50 30.3 → 16.9 s, p99 410 → 213 s, hit 15.2 → 19.1 %,
 *  band ×0.9–1.1 p90 ÷ the best other 1.090 → 1.044× (geo), but p90 186.1 → 196.1 s (+5.4 %), and
 *  smg_cache_aware (192.8 s) stays the best policy there: check both traces before changing them
 *  or making admission the default. */
export const ADMISSION_DEFAULTS: AdmissionSettings = {
  max_waiting: 2,
  max_kv_usage: 0.98,
  max_queued: 4096,
  max_queued_per_tenant: 1024,
  max_wait_ms: 600_000,
  locality_wait_ms: 30_000,
  locality_min_tokens: 1024,
  locality_window: 64,
};

/** Dispatch by engine when not configured (gateway `models[].dispatch`, `bench fleet --dispatch`):
 *  late binding where the fleet simulator shows it wins, vLLM (Mooncake conversation half, 8
 *  workers, 200k KV, virtual time: p90 TTFT ×1 126.5 s vs 177.7 s at arrival, 0.42× round_robin;
 *  ×2 923.7 vs 972.4 s); arrival where it loses, SGLang (×1 266.0 vs 151.9 s: its scheduler orders
 *  its own queue by prefix match), and for any other OpenAI-compatible server (no engine queue
 *  signals to admit by). On the synthetic trace late binding is mixed (the comment above). */
export const DEFAULT_DISPATCH_BY_ENGINE = { vllm: 'admission', sglang: 'arrival', openai: 'arrival' } as const;
