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
  /** Release order (release-order.ts): a held call is released as if it arrived
   *  min(release_max_slack_ms, uncached prompt tokens × release_ms_per_token) later (0: arrival order). */
  release_ms_per_token: number;
  release_max_slack_ms: number;
  /** ... and at most release_ms_per_held × the calls its tenant holds at each release (0: no such
   *  bound): near arrival order while the gate holds few calls, the full slack under a backlog. */
  release_ms_per_held: number;
  /** ... and at most release_slack_per_drain × the tenant's drain time at each release: its held
   *  calls × the tenants in the round × the recent mean interval between releases, i.e. about what
   *  arrival order (tenants in turn) would make its newcomer wait now; another tenant's backlog
   *  does not loosen it (0: no such bound). In time, not in calls, so the bound
   *  follows the fleet's own speed: a fleet that releases a call every few ms (a fault, a short
   *  backlog) is close to arrival order, a backlog of minutes gets the whole slack. */
  release_slack_per_drain: number;
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
 *  or making admission the default.
 *  Release order (release-order.ts), release_ms_per_token 40 and release_max_slack_ms 1,800 s,
 *  with max_wait_ms raised to 1,800 s to match (a deadline under the slack spills the calls the
 *  order defers: ms/token 30, slack 1,800 s, max_wait 600 s gave ×2 p90 877 s, imbalance 1.67).
 *  Chosen from this sweep (`bench fleet` on the conversation half, 8 vLLM workers, 200k KV,
 *  `--policies ctxgate --release-ms-per-token M --release-max-slack-ms C --max-wait-ms C`),
 *  ×2 p90 / p99 TTFT in s (round_robin 1,031.1 / 1,253.8; the arrival-order gate 923.0 / 1,028.8):
 *      M \ C   600       900      1,200       1,500       1,800       2,400
 *      5                             -           -       800.8/928     -
 *      10    804.5/935     -         -           -       766.1/969     -
 *      15      -           -     405.0/1242      -       402.5/1210    -
 *      20      -           -     428.1/1170  402.1/1256  402.4/1246  402.4/1224
 *      25      -           -     455.6/1098  394.0/1191  402.1/1254    -
 *      30    810.8/983  767.1/998 555.4/1065 415.8/1129  399.5/1210  386.0/1257
 *      40      -           -         -           -       416.5/1122  397.4/1222
 *      50      -           -     803.2/1005      -       535.5/1058    -
 *      100     -           -     838.7/982       -           -         -
 *  (30 / 300 s with max_wait 600 s: 911.4.) Slack under ~1,500 s or ms/token ≥ 50 leaves the
 *  expensive calls' backlog in the p90; 15–40 ms/token with 1,500–2,400 s is a plateau at
 *  386–416 s. Of it, 40 / 1,800 has the lowest ×2 p99 (1,122 s, +9 % over the
 *  arrival-order gate, under round_robin's) and the best of the neighbouring loads: ×1 p90 31.9 s
 *  (0.11× rr; was 126.5) at p99 350.0 s (was 145.1: the bounded cost, under rr's 502.1), hit 8.2 %,
 *  imbalance 1.11; ×1.5 49.5 / 1,025.6 s (rr 764.1 / 986.8); ×2.5 546.4 / 1,185.0 (rr 1,178.2 /
 *  1,416.1); ×3 971.6 / 1,225.0 (rr 1,282.2 / 1,524.2; imbalance 1.36). 30 / 1,500: ×1 32.1 /
 *  340.0, ×1.5 99.0 / 1,040.4, ×2.5 602.2 / 1,203.9. Synthetic trace (×1, all defaults): p90
 *  196.1 → 26.0 s (smg 192.8), p99 213.3 → 359.1, hit 19.1 → 16.9 % (smg 16.0) without the caps
 *  below; with them (the defaults since ce588b8) 101.7 s, p99 268.1 s, hit 21.4 % (smg 184.8 s);
 *  after 24d199b (cache estimates are reads, review s33 F8) 101.8 s, p99 275.9 s, hit 20.6 %.
 *  release_ms_per_held 8 s: the slack is capped at each release at 8 s × the calls the tenant holds
 *  (the p99 at ×1: with the whole slack, ×1's longest prompts, ~67k tokens, waited out every
 *  burst: p99 350.0 s, above the baselines' 218–313). Sweep (40 ms/token, 1,800 s, `bench fleet`
 *  as above with `--release-ms-per-held K`), ×1 p90 / p99 — ×2 p90 / p99 TTFT in s:
 *      K s   ×1            ×2
 *      0     31.9 / 350.0   416.5 / 1,122   (no cap: the order above)
 *      1    125.1 / 147.5   815.8 /   972   (×2 fails: the queue reaches 1,024 and spills)
 *      2    130.9 / 158.6   843.0 /   949
 *      3    131.1 / 172.0   650.9 /   963
 *      5    132.5 / 207.4   461.9 / 1,063
 *      6    126.2 / 215.9   433.3 / 1,081
 *      7    118.6 / 204.7   435.2 / 1,096
 *      8    104.2 / 204.9   421.9 / 1,103
 *      9    111.3 / 220.5   410.9 / 1,105
 *      10   107.4 / 251.0   417.7 / 1,112
 *      12    94.8 / 254.2   411.7 / 1,103
 *  5–9 s is a plateau at ×1 p99 205–221 s with ×2 p90 411–462 s; 8 s has the lowest ×1 p99 with
 *  ×2 p90 within 1.3 % of the uncapped order: ×1 p90 104.2 s (0.34× rr), p99 204.9 s (under every
 *  baseline: dynamo_kv 218.2), no call's TTFT over 300 s (78 before); ×2 p99 1,103 (was 1,122).
 *  Other loads, no cap → 8 s (p90 / p99; round_robin's p90): ×0.95 32.2 → 72.7 / 209.6 → 103.6
 *  (244.8); ×1.05 31.6 → 144.6 / 530.0 → 368.6 (357.2); ×1.1 31.9 → 150.0 / 654.8 → 475.3 (411.9);
 *  ×1.5 49.5 → 195.4 / 1,025.6 → 1,014.5 (764.1); ×1.9 355.1 → 386.0 / 1,102.1 → 1,089.6 (988.4);
 *  ×2.1 432.0 → 454.4 / 1,112.6 → 1,111.8 (1,069.2); ×2.5 546.4 → 691.1 / 1,185.0 → 1,163.7
 *  (1,178.2: 0.59×, the queue reaches 1,024 and spills; 10 s 685.8, 12 s 678.1); ×3 971.6 → 972.6
 *  / 1,225.0 → 1,254.8 (1,282.2). So p99 falls from ×0.95 to ×2.5 and p90 rises, most at ×2.5.
 *  A cap fixed at push time (the count then, not now) did worse: 10 s 275.1 / 500.9 s at ×1 p99 /
 *  ×2 p90, 6 s 237.6 / 561.5 (calls held while the queue was short keep their small slack).
 *  release_slack_per_drain 16: the slack is also capped at each release at 16 × the tenant's drain
 *  time (its held calls × the tenants in the round × the running mean interval between releases;
 *  the simulator holds one tenant, so there the calls held × the interval), so no call is passed by one that
 *  arrived more than 16 drain times after it (what arrival order would make a newcomer wait,
 *  measured in the fleet's own time, so a fleet that releases calls fast stays near arrival order).
 *  Sweep (40 ms/token, 1,800 s, max_wait 1,800 s, `--release-slack-per-drain K`; held cap 8 s and
 *  0 gave the same figures within 1 %), p90 / p99 TTFT in s, and calls whose first token came
 *  after 600 s (the SDKs' timeout):
 *      K      ×1                ×2
 *      0      104.2 / 204.9 0   421.9 / 1,103 429   (no drain bound)
 *      4      137.2 / 165.2 0   829.7 /   981 1,887 (×2 fails: the queue reaches 1,024 and spills)
 *      8      130.8 / 175.0 0   525.0 / 1,084 448   (0.51× rr)
 *      16     122.6 / 198.6 0   476.6 / 1,105 431   (0.46× rr)
 *      24       -               452.6 / 1,106 428
 *      32     116.1 / 221.0 0   438.5 / 1,105 432
 *  (taken before 24d199b; re-run after it: K 0 109.3 / 212.4 0 — 422.3 / 1,099 426; K 8 ×2
 *  530.5 / 1,079 458; K 16 121.6 / 195.0 0 — 476.3 / 1,100 434.)
 *  16 is the smallest K that meets ×2 ≤ 0.5× rr with a margin; ×1 p90 121.6 s (0.40× rr, every
 *  baseline 190–304 s), p99 195.0 s (the lowest of the nine policies; arrival order 144.7).
 *  max_wait_ms must stay 1,800 s with it: 600 s spills the deferred calls at ×2 (920.0 s; 906.1 s
 *  after 24d199b).
 *  An absolute ceiling on the drain term (review s32 F4) is release_max_slack_ms itself: the slack
 *  is a min of its terms, so min(k × drain, C) under min(…, release_max_slack_ms) is the same as
 *  release_max_slack_ms C; no separate setting. Sweep with k 16 (`--release-max-slack-ms C`,
 *  40 ms/token, max_wait 1,800 s), ×1 p90 / p99 — ×2 p90 / p99 TTFT in s, ×2 calls with TTFT > 600 s:
 *      C        ×1              ×2
 *      15 s     130.4 / 149.2   918.4 /   986  2,479  (queue reaches 1,024: 3,230 spilled)
 *      60 s     131.5 / 151.4   902.5 /   975  2,397
 *      300 s    136.7 / 160.9   861.5 /   977  2,413
 *      900 s    122.6 / 198.6   743.0 /   993  1,106
 *      1,800 s  122.6 / 198.6   476.6 / 1,105    431  (the default)
 *  (taken before 24d199b; re-run after it, same C: ×1 139.6 / 158.2, 125.4 / 146.4, 133.5 / 159.1,
 *  121.6 / 195.0, 121.6 / 195.0; ×2 935.2 / 990 2,420, 899.3 / 977 2,376, 853.3 / 978 2,382,
 *  738.5 / 986 1,138, 476.3 / 1,100 434.)
 *  ×1 keeps its targets at every C (≤ 0.45× rr, under every baseline), ×2 ≤ 0.5× rr (515.6 s) needs
 *  C ≳ 1,500 s (the M × C sweep above): the ×2 gain is holding expensive calls for tens of
 *  minutes, which no ceiling that suits a client with a 15 s (or 600 s) timeout keeps. A
 *  deployment whose clients give up after T sets release_max_slack_ms under T (15 s: ×2 is arrival
 *  order's 918 s, ×1 130.4 s).
 *  Rejected: a cap on each call's own wait (slack ≤ R × the time it has waited): no newcomer can
 *  pass an older call at once, so the short calls wait with the rest (R 0.5/1: ×2 831/824 s,
 *  ×1 p99 150/148 s; R > 1 turns the unsaturated calls LIFO: R 2 ×1 p99 838 s).
 *  **The default since ce588b8 (2026-12-02)** (release_ms_per_token 40, max_wait_ms 1,800 s; before it,
 *  0 and 600 s: arrival order within a tenant, still one setting away with release_ms_per_token 0).
 *  What kept it opt-in: its gains come from holding the expensive calls for many minutes, which the
 *  simulator's clients wait out and real ones may not (the official SDKs give up at 600 s and
 *  retry), and in `serve` a call whose worker lost its cache (a restart, an eviction) has a large
 *  uncached prompt, so calls that hit the cache overtake it while they keep coming: `bench chaos
 *  --duration-s 60` (default pipeline, 4 reference workers killed and hung in turn, 15 s client
 *  timeout) left 12 and 21 non-stream calls and up to 7 streams held until the client gave up
 *  with 40 / 1,800 s and no caps, 3 with the backlog cap (release_ms_per_held 8 s). The drain
 *  bound (release_slack_per_drain) bounds that overtaking to ~16 × the arrival-order wait (a
 *  FairQueue test: a call with a 400 s slack among calls leaving every 5 ms waits 0.74 s, not
 *  400 s). With both caps, `bench chaos --duration-s 60` in quiet windows, one run each:
 *  on ff6b837 plain 0 failed / 0 hung, p50 / p99 163 / 1,195 ms, RSS −5.0 %; `--redis` 0 / 0,
 *  204 / 1,316 ms, +7.9 % (arrival order in the same window: 0 / 0, 290 / 647 ms, +24.4 %; `--redis`
 *  0 / 0, 311 / 657 ms, +34.9 %); on 6c2db7b with these two defaults changed, plain
 *  0 / 0, 177 / 1,308 ms, RSS 432.5 → 451.2 MB (+4.3 %); `--redis` 0 / 0, 211 / 1,402 ms, 449.1 →
 *  463.0 MB (+3.1 %); control right after (arrival order): 0 / 0, 239 / 534 ms, 440.7 → 536.1 MB
 *  (+21.6 %); `--redis` 0 / 0, 284 / 633 ms, 429.6 → 548.4 MB (+27.7 %). So no call is lost or hung
 *  under faults with the order; the price there is the tail (chaos p99 ~2× arrival order's: the
 *  calls whose worker restarted cold wait their bounded slack), and in the simulator ×1 p99 195.0
 *  vs 144.7 s (after 24d199b). A deployment whose clients give up after T sets release_max_slack_ms under T, or
 *  release_ms_per_token 0 for arrival order.
 *  Every figure above was taken before a held call's prompt was charged once (2026-12-02, review
 *  s35 F2, release-order.ts releasePlacement: a call is priced less the prompt of the held call of
 *  its tenant whose prompt its own extends, and never released before that call); the defaults
 *  were not re-swept after it. With it, same commands (fleet simulator): conversation half ×1 p90 /
 *  p99 122.9 / 192.4 s (was 121.6 / 195.0; 0.40× rr), ×2 401.3 / 1,008.3 s (was 476.3 / 1,099.6;
 *  0.39× rr), hit 9.3 / 18.9 %, imbalance 1.13 / 1.08, ×2 calls with TTFT > 600 s 378 (was 434);
 *  ×0.9 23.0 s (was 21.7), ×1.1 192.2 (221.1), ×1.5 325.7 (345.6): a little worse below ×1,
 *  better above. 4 tenants ×1 / ×2 162.0 / 654.0 s (was 155.3 / 794.1), 16 tenants 215.2 / 940.6
 *  (231.0 / 959.4). Synthetic trace ×1 p90 90.5 s, p99 283.8 s, hit 19.9 % (was 101.8 / 275.9 /
 *  20.6). two-kinds (`bench fleet two-kinds --workers 2 --kv-tokens 200000 --tenants 2`) ×1 132.1 s,
 *  decode / prefill 132.4 / 131.7 s, the arrival-order gate's exactly (was 170.7 s, 193.2 / 141.4),
 *  ×2 372.9 s (was 463.4; the arrival-order gate 385.9).
 *  Since 2026-12-02 the uncached tokens are rounded down to a power of two before they are priced
 *  (release-order.ts sizeClassTokens; these settings unchanged): conversation half ×1 / ×2 / ×0.9
 *  103.4 / 348.7 / 22.9 s, 4 tenants 136.4 / 523.4 s, 16 tenants 202.1 / 897.1 s, two-kinds seeds
 *  1–5 median ×1 / ×2 108.9 / 362.1 s (122.9 / 401.3 / 23.0, 162.0 / 654.0, 215.2 / 940.6, 109.2 /
 *  372.9 before). Without it, release_ms_per_held 12 s (or counting the tenants in the held cap,
 *  or a cap by held work) recovered 4 tenants ×1 but slowed two-kinds ×2 by 6–8 % (median).
 *  Since 2026-12-03 the simulator passes a call as the gate does (nothing held and a worker free: not
 *  queued, so its zero gap no longer enters the drain bound's mean interval) and looks as the gate
 *  does (one call per worker a look, repeated; s39 F2); these settings unchanged. Same
 *  commands: conversation half ×1 / ×2 103.4 / 348.7 s, 4 tenants 136.4 / 523.4 s, 16 tenants
 *  202.1 / 897.1 s, the arrival-order gate 127.1 / 932.6 s, two-kinds seeds 1–5 median 108.9 /
 *  362.1 s: all unchanged; ×0.9 22.9 → 24.1 s (p99 45.1 → 45.9 s); synthetic trace ×1 p90 89.0 →
 *  79.8 s, p99 289.4 → 274.0 s, hit 21.7 → 20.3 %; with `--index precise` 91.7 → 83.6 s, p99 300.0 →
 *  317.4 s. */
export const ADMISSION_DEFAULTS: AdmissionSettings = {
  max_waiting: 2,
  max_kv_usage: 0.98,
  max_queued: 4096,
  max_queued_per_tenant: 1024,
  max_wait_ms: 1_800_000,
  locality_wait_ms: 30_000,
  locality_min_tokens: 1024,
  locality_window: 64,
  release_ms_per_token: 40,
  release_max_slack_ms: 1_800_000,
  release_ms_per_held: 8_000,
  release_slack_per_drain: 16,
};

/** Dispatch by engine when not configured (gateway `models[].dispatch`, `bench fleet --dispatch`):
 *  late binding where the fleet simulator shows it wins, vLLM (Mooncake conversation half, 8
 *  workers, 200k KV, virtual time, with the default release order, a held prompt charged once:
 *  p90 TTFT ×1 122.9 s vs 177.7 s at arrival, 0.40× round_robin; ×2 401.3 vs 972.4 s; the
 *  arrival-order gate 127.1 / 932.6 s);
 *  arrival where it loses, SGLang (×1 266.0 vs 151.9 s: its scheduler orders
 *  its own queue by prefix match), and for any other OpenAI-compatible server (no engine queue
 *  signals to admit by). On the synthetic trace (×1) late binding with the arrival-order gate was
 *  mixed (the comment above); with the release order p90 101.8 s vs smg_cache_aware 184.8 s, the
 *  best baseline there (after 24d199b; 101.7 s at ce588b8). */
export const DEFAULT_DISPATCH_BY_ENGINE = { vllm: 'admission', sglang: 'arrival', openai: 'arrival' } as const;
