// The one schema of the gateway config (YAML). Every section other parts of ctxgate read lives
// here, optional with named defaults, so a config is validated once, at start, in one place.
import { Type, type Static } from '@sinclair/typebox';
import { ADMISSION_DEFAULTS } from '../../kvplanner/admission/admission-defaults.ts';
import { DEFAULT_BLOCK_SIZE } from '../../kvplanner/block-hash.ts';
import { DEFAULT_LEDGER_WRITE_VERSION } from '../../middleware/ledger/slot.ts';
import { DEFAULT_OFFLOAD_MIN_CHARS } from '../../middleware/tokens/render-tokens.ts';

export const DEFAULT_HOST = '127.0.0.1';
export const DEFAULT_PORT = 8080;
/** The largest TCP port (listen.port is checked against it). */
export const MAX_PORT = 65_535;
export const DEFAULT_LAYOUT = 'ctxgate';
export const DEFAULT_POLICY = 'round_robin';
export const DEFAULT_MAX_BODY_BYTES = 32 * 1024 * 1024;
export const DEFAULT_MAX_MESSAGES = 10_000;
export const DEFAULT_MAX_SESSIONS = 10_000;
export const DEFAULT_MAX_SESSION_BYTES = 64 * 1024 * 1024;
export const DEFAULT_RATE_LIMIT_PER_MINUTE = 0; // 0 = off
export const DEFAULT_MAX_TOOL_OUTPUT_BYTES = 1024 * 1024;
export const DEFAULT_MAX_JSON_DEPTH = 128;
export const DEFAULT_SHUTDOWN_DEADLINE_MS = 10_000;
export const DEFAULT_CONNECT_TIMEOUT_MS = 2_000;
export const DEFAULT_HEADERS_TIMEOUT_MS = 300_000;
export const DEFAULT_BODY_TIMEOUT_MS = 300_000;
export const DEFAULT_ATTEMPTS = 2;
export const DEFAULT_MAX_IN_FLIGHT = 256;
export const DEFAULT_HEALTH_INTERVAL_MS = 5_000;
export const DEFAULT_HEALTH_TIMEOUT_MS = 2_000;
export const DEFAULT_EJECT_AFTER = 3;
export const DEFAULT_READMIT_AFTER = 1;
export const DEFAULT_LEDGER_PATH = 'ctxgate-usage.sqlite';
export const DEFAULT_LEDGER_RETENTION_DAYS = 90;
export const DEFAULT_LEDGER_BATCH_SIZE = 256;
export const DEFAULT_LEDGER_FLUSH_MS = 1_000;
export const DEFAULT_CAPTURE_SAMPLE_RATE = 0;
export const DEFAULT_CAPTURE_MAX_BYTES = 256 * 1024 * 1024;
export const DEFAULT_CAPTURE_DIR = 'ctxgate-capture';
export const DEFAULT_REQUEST_RECORDS = 1_000;
// The reference worker's modeled timing; real engines send none of these, so nothing leaks by default.
export const DEFAULT_FORWARD_RESPONSE_HEADERS = ['x-sim-timing'] as const;
export const DEFAULT_SCRAPE_METRICS_MS = 0;
/** scrape_metrics_ms when dispatch is admission and it is not set: the engine signals the gate
 *  admits by (how many wait, KV usage); the calls sent since the last scrape count as waiting.
 *  The scraper polls only while the model has calls in flight or held (load-signals.ts). */
export const DEFAULT_ADMISSION_SCRAPE_MS = 250;
export const DEFAULT_ARTIFACT_MAX_BYTES = 256 * 1024 * 1024;
/** Longest prompt (characters of all message text) the gateway renders and forwards. */
export const DEFAULT_MAX_PROMPT_CHARS = 4_000_000;
export const DEFAULT_MAX_CONCURRENT_PER_TENANT = 0; // 0 = unlimited
/** Jobs waiting for a render pool thread, all tenants together; more get 503. */
export const DEFAULT_RENDER_POOL_MAX_QUEUE = 64;
/** Jobs of one tenant waiting or running in the render pool; more get 429. */
export const DEFAULT_RENDER_POOL_MAX_PER_TENANT = 16;
/** Scheduling niceness of render pool threads (Linux): the event loop wins the CPU when they contend. */
export const DEFAULT_RENDER_POOL_NICE = 10;
/** Render threads one tenant's jobs may end or fail per minute before its big calls get 429. */
export const DEFAULT_RENDER_POOL_MAX_FAILURES_PER_TENANT = 4;
/** Whole request (headers and body) must arrive within this (Node's requestTimeout). */
export const DEFAULT_REQUEST_TIMEOUT_MS = 60_000;
/** Request headers must arrive within this (Node's headersTimeout; slowloris). */
export const DEFAULT_HEADERS_TIMEOUT_MS_SERVER = 10_000;
/** Open client connections the server accepts at once; more are closed on arrival. */
export const DEFAULT_MAX_CONNECTIONS = 4_096;
/** A worker's KV events count as stopped when none came this long after a request went there. */
export const DEFAULT_KV_EVENTS_STALE_AFTER_MS = 5_000;
export const DEFAULT_RESPONSES_TTL_S = 24 * 60 * 60;
export const DEFAULT_RESPONSES_MAX_ENTRY_BYTES = 8 * 1024 * 1024;
export const DEFAULT_RESPONSES_MAX_BYTES = 256 * 1024 * 1024;

const PosInt = (def: number) => Type.Integer({ minimum: 1, default: def });
const NonNegInt = (def: number) => Type.Integer({ minimum: 0, default: def });

/** A ZeroMQ endpoint the gateway can connect to: tcp needs host and port (zeromq rejects a bare
 * host with "Invalid argument" at startup, naming no field), ipc a path. */
const ZMQ_ENDPOINT = '^(?:tcp://\\S+:\\d{1,5}|ipc://\\S+)$';

export const WorkerSchema = Type.Object(
  {
    url: Type.String({ pattern: '^https?://' }),
    /** Shown to tenants (headers, records, reports); default `w<index>`, never the URL. */
    id: Type.Optional(Type.String({ minLength: 1 })),
    /** Key the gateway sends to this worker (`env:NAME` or literal); never the client's key. */
    api_key: Type.Optional(Type.String()),
    /** Defaults to upstream.max_in_flight. */
    max_in_flight: Type.Optional(Type.Integer({ minimum: 0 })),
    kv_tokens: Type.Optional(Type.Integer({ minimum: 1 })),
    /** The engine's KV cache events (vLLM --kv-events-config, SGLang --kv-events-config): the
     *  gateway subscribes and routes on what the worker's cache holds (policy ctxgate). */
    kv_events: Type.Optional(
      Type.Object(
        {
          /** The engine's PUB socket, as the gateway connects to it (tcp://host:port, ipc://path). */
          endpoint: Type.String({ pattern: ZMQ_ENDPOINT }),
          /** The engine's ROUTER replay socket (missed batches are asked for there). */
          replay_endpoint: Type.Optional(Type.String({ pattern: ZMQ_ENDPOINT })),
          topic: Type.String({ default: '' }),
          stale_after_ms: PosInt(DEFAULT_KV_EVENTS_STALE_AFTER_MS),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);

const TokenPricing = Type.Object(
  {
    input_per_mtok: Type.Number({ minimum: 0 }),
    cached_input_per_mtok: Type.Number({ minimum: 0 }),
    output_per_mtok: Type.Number({ minimum: 0 }),
    cache_write_per_mtok: Type.Optional(Type.Number({ minimum: 0 })),
  },
  { additionalProperties: false },
);
const GpuPricing = Type.Object({ gpu_hour_usd: Type.Number({ minimum: 0 }) }, { additionalProperties: false });

export const ModelSchema = Type.Object(
  {
    name: Type.String({ minLength: 1 }),
    /** Name sent upstream when the worker serves the model under another name. */
    upstream_model: Type.Optional(Type.String({ minLength: 1 })),
    tokenizer: Type.Optional(Type.String()),
    /** Jinja chat-template file overriding (or supplying) the tokenizer's own template. */
    chat_template: Type.Optional(Type.String({ minLength: 1 })),
    workers: Type.Array(WorkerSchema, { minItems: 1 }),
    layout: Type.Union([Type.Literal('passthrough'), Type.Literal('ctxgate')], { default: DEFAULT_LAYOUT }),
    policy: Type.String({ default: DEFAULT_POLICY }),
    policy_options: Type.Record(Type.String(), Type.Unknown(), { default: {} }),
    budget_tokens: Type.Optional(Type.Integer({ minimum: 1 })),
    /** Scrape each worker's /metrics every N ms for engine load (queue, KV usage); 0 = off. */
    scrape_metrics_ms: NonNegInt(DEFAULT_SCRAPE_METRICS_MS),
    /** admission: a call no worker's cache holds waits at the gateway until a worker can admit
     *  it (engine waiting and KV usage from scrape_metrics_ms, which it needs), instead of
     *  queueing inside the engine it was sent to; vLLM flavours only (load.ts). Unset: by flavor,
     *  DEFAULT_DISPATCH_BY_ENGINE (vllm: admission, with scrape_metrics_ms
     *  DEFAULT_ADMISSION_SCRAPE_MS unless set), resolved in load.ts. */
    dispatch: Type.Optional(Type.Union([Type.Literal('arrival'), Type.Literal('admission')])),
    admission: Type.Object(
      {
        max_waiting: PosInt(ADMISSION_DEFAULTS.max_waiting),
        max_kv_usage: Type.Number({ exclusiveMinimum: 0, maximum: 1, default: ADMISSION_DEFAULTS.max_kv_usage }),
        max_queued: PosInt(ADMISSION_DEFAULTS.max_queued),
        max_queued_per_tenant: PosInt(ADMISSION_DEFAULTS.max_queued_per_tenant),
        max_wait_ms: PosInt(ADMISSION_DEFAULTS.max_wait_ms),
        locality_wait_ms: NonNegInt(ADMISSION_DEFAULTS.locality_wait_ms),
        locality_min_tokens: NonNegInt(ADMISSION_DEFAULTS.locality_min_tokens),
        locality_window: PosInt(ADMISSION_DEFAULTS.locality_window),
        release_ms_per_token: Type.Number({ minimum: 0, default: ADMISSION_DEFAULTS.release_ms_per_token }),
        release_max_slack_ms: NonNegInt(ADMISSION_DEFAULTS.release_max_slack_ms),
        release_ms_per_held: NonNegInt(ADMISSION_DEFAULTS.release_ms_per_held),
        release_slack_per_drain: Type.Number({ minimum: 0, default: ADMISSION_DEFAULTS.release_slack_per_drain }),
      },
      { additionalProperties: false, default: {} },
    ),
    block_size: PosInt(DEFAULT_BLOCK_SIZE),
    /** Engine behind the workers: vllm (default), sglang, or openai (any OpenAI-compatible server). */
    flavor: Type.Optional(Type.Union([Type.Literal('vllm'), Type.Literal('sglang'), Type.Literal('openai')])),
    pricing: Type.Optional(Type.Union([TokenPricing, GpuPricing])),
    /** Stage name → on/off; `volatile` also takes `eager` (move label lines such as `Current date: …` on first sight). */
    // One switch per pipeline stage (the stage names of middleware/); an unknown key is a config error, not a no-op.
    transforms: Type.Object(
      {
        canonical_tools: Type.Optional(Type.Boolean()),
        volatile: Type.Optional(Type.Union([Type.Boolean(), Type.Literal('eager')])),
        stabilise: Type.Optional(Type.Boolean()),
        ledger: Type.Optional(Type.Boolean()),
        compaction: Type.Optional(Type.Boolean()),
        leaf_note: Type.Optional(Type.Boolean()),
      },
      { additionalProperties: false, default: {} },
    ),
    capture: Type.Object(
      {
        enabled: Type.Boolean({ default: false }),
        sample_rate: Type.Number({ minimum: 0, maximum: 1, default: DEFAULT_CAPTURE_SAMPLE_RATE }),
        max_bytes: PosInt(DEFAULT_CAPTURE_MAX_BYTES),
        dir: Type.String({ default: DEFAULT_CAPTURE_DIR }),
      },
      { additionalProperties: false, default: {} },
    ),
  },
  { additionalProperties: false },
);

/** A tenant id: printable (no control characters: ids are joined into keys, logs and labels). */
const TenantId = Type.String({ minLength: 1, pattern: '^[^\\u0000-\\u001f\\u007f]+$' });

export const AuthKeySchema = Type.Object(
  {
    /** `sha256:<64 hex>` or `env:NAME` (read and hashed at load; plaintext is not kept). */
    key: Type.String({ pattern: '^(sha256:[0-9a-fA-F]{64}|env:[A-Za-z_][A-Za-z0-9_]*)$' }),
    tenant: TenantId,
    admin: Type.Boolean({ default: false }),
    /** Stable id for usage records; defaults to the first 12 hex digits of the hash. */
    id: Type.Optional(Type.String({ minLength: 1 })),
  },
  { additionalProperties: false },
);

export const AuthSchema = Type.Union(
  [
    Type.Object({ mode: Type.Literal('none') }, { additionalProperties: false }),
    Type.Object(
      { mode: Type.Literal('keys'), keys: Type.Array(AuthKeySchema, { minItems: 1 }) },
      { additionalProperties: false },
    ),
  ],
  { default: { mode: 'none' } },
);

export const ConfigSchema = Type.Object(
  {
    listen: Type.Object(
      {
        host: Type.String({ default: DEFAULT_HOST }),
        port: Type.Integer({ minimum: 0, maximum: MAX_PORT, default: DEFAULT_PORT }),
        request_timeout_ms: PosInt(DEFAULT_REQUEST_TIMEOUT_MS),
        headers_timeout_ms: PosInt(DEFAULT_HEADERS_TIMEOUT_MS_SERVER),
        max_connections: PosInt(DEFAULT_MAX_CONNECTIONS),
        /** `auth: none` on an address other than loopback is refused unless this is true. */
        allow_unauthenticated: Type.Boolean({ default: false }),
      },
      { additionalProperties: false, default: {} },
    ),
    /** Per-tenant prefix-cache isolation (cache_salt). */
    tenancy: Type.Object(
      {
        /** Server secret the per-tenant salts derive from (`env:NAME` or literal); else env
         *  CTXGATE_CACHE_SALT_SECRET; else one generated per process (salts change on restart). */
        cache_salt_secret: Type.Optional(Type.String({ minLength: 16 })),
        /** Tenants that deliberately share one salt (one cache namespace): see the README trade-off. */
        cache_groups: Type.Array(
          Type.Object(
            {
              name: Type.String({ minLength: 1 }),
              tenants: Type.Array(TenantId, { minItems: 2 }),
            },
            { additionalProperties: false },
          ),
          { default: [] },
        ),
      },
      { additionalProperties: false, default: {} },
    ),
    auth: AuthSchema,
    models: Type.Array(ModelSchema, { minItems: 1 }),
    redis: Type.Optional(Type.Object({ url: Type.Optional(Type.String()) }, { additionalProperties: false })),
    /** Stored OpenAI Responses (previous_response_id, GET/DELETE /v1/responses/{id}); Redis when redis.url is set. */
    responses: Type.Object(
      {
        ttl_s: PosInt(DEFAULT_RESPONSES_TTL_S),
        /** A larger response (its whole conversation) is not stored; a follow-up naming it gets 404. */
        max_entry_bytes: PosInt(DEFAULT_RESPONSES_MAX_ENTRY_BYTES),
        /** Memory store only: total bytes kept (least recently used go first). */
        max_bytes: PosInt(DEFAULT_RESPONSES_MAX_BYTES),
      },
      { additionalProperties: false, default: {} },
    ),
    /** Content-addressed store of full outputs evicted by compaction (redacted). No dir: bounded memory. */
    artifacts: Type.Object(
      { dir: Type.Optional(Type.String({ minLength: 1 })), max_bytes: PosInt(DEFAULT_ARTIFACT_MAX_BYTES) },
      { additionalProperties: false, default: {} },
    ),
    ledger: Type.Object(
      {
        path: Type.String({ default: DEFAULT_LEDGER_PATH }),
        retention_days: PosInt(DEFAULT_LEDGER_RETENTION_DAYS),
        batch_size: PosInt(DEFAULT_LEDGER_BATCH_SIZE),
        flush_ms: PosInt(DEFAULT_LEDGER_FLUSH_MS),
        /** Where records go. Default: [sqlite], or [redis, sqlite] when redis.url is set (reads
         *  from the first). [redis] alone keeps no local copy. */
        stores: Type.Optional(
          Type.Array(Type.Union([Type.Literal('sqlite'), Type.Literal('redis')]), {
            minItems: 1,
            maxItems: 2,
            uniqueItems: true,
          }),
        ),
        /** Local file for Redis ledger batches during a Redis outage (default: `<path>.redis-spool`). */
        spool_path: Type.Optional(Type.String({ minLength: 1 })),
      },
      { additionalProperties: false, default: {} },
    ),
    /** How session state is stored (shared by replicas through redis.url). */
    session_state: Type.Object(
      {
        /** Shape the context ledger's part of a session is written with; both are read. 2 (chunked
         *  call records) unless a rolling upgrade from a release that reads only 1 is under way:
         *  then 1 until no replica of that release is left (docs/deployment.md). */
        ledger_write_version: Type.Union([Type.Literal(1), Type.Literal(2)], { default: DEFAULT_LEDGER_WRITE_VERSION }),
      },
      { additionalProperties: false, default: {} },
    ),
    limits: Type.Object(
      {
        max_body_bytes: PosInt(DEFAULT_MAX_BODY_BYTES),
        max_messages: PosInt(DEFAULT_MAX_MESSAGES),
        max_sessions: PosInt(DEFAULT_MAX_SESSIONS),
        max_session_bytes: PosInt(DEFAULT_MAX_SESSION_BYTES),
        /** Longest tool output kept in session state (longer ones are kept truncated). */
        max_tool_output_bytes: PosInt(DEFAULT_MAX_TOOL_OUTPUT_BYTES),
        /** Deepest JSON nesting accepted in a request body (arrays + objects). */
        max_json_depth: PosInt(DEFAULT_MAX_JSON_DEPTH),
        /** Longest prompt, in characters of message/prompt text; longer gets 413. */
        max_prompt_chars: PosInt(DEFAULT_MAX_PROMPT_CHARS),
        /** Requests one tenant may have in flight at once (0 = unlimited); more get 429. */
        max_concurrent_per_tenant: NonNegInt(DEFAULT_MAX_CONCURRENT_PER_TENANT),
        rate_limit: Type.Object(
          { per_minute: NonNegInt(DEFAULT_RATE_LIMIT_PER_MINUTE) },
          { additionalProperties: false, default: {} },
        ),
      },
      { additionalProperties: false, default: {} },
    ),
    /**
     * Worker threads that render and tokenise big calls off the event loop
     * (gateway/workers-pool/): `threads` absent = availableParallelism() − 1, 1 to 4; 0 = off.
     */
    render_pool: Type.Object(
      {
        threads: Type.Optional(Type.Integer({ minimum: 0, maximum: 256 })),
        /** Characters to render afresh (render-tokens.ts newChars) from which a call goes to the pool. */
        min_chars: NonNegInt(DEFAULT_OFFLOAD_MIN_CHARS),
        max_queue: PosInt(DEFAULT_RENDER_POOL_MAX_QUEUE),
        max_per_tenant: PosInt(DEFAULT_RENDER_POOL_MAX_PER_TENANT),
        /** Niceness of the pool threads (0–19, Linux only; elsewhere ignored). */
        nice: Type.Integer({ minimum: 0, maximum: 19, default: DEFAULT_RENDER_POOL_NICE }),
        /** Render threads one tenant's jobs may end or fail per minute; then 429 until one is a minute old. */
        max_failures_per_tenant: PosInt(DEFAULT_RENDER_POOL_MAX_FAILURES_PER_TENANT),
      },
      { additionalProperties: false, default: {} },
    ),
    /** Optional daily spend caps per tenant, checked against the usage ledger. */
    budgets: Type.Array(
      Type.Object({ tenant: TenantId, usd_per_day: Type.Number({ minimum: 0 }) }, { additionalProperties: false }),
      { default: [] },
    ),
    shutdown: Type.Object(
      { deadline_ms: NonNegInt(DEFAULT_SHUTDOWN_DEADLINE_MS) },
      { additionalProperties: false, default: {} },
    ),
    upstream: Type.Object(
      {
        connect_timeout_ms: PosInt(DEFAULT_CONNECT_TIMEOUT_MS),
        headers_timeout_ms: PosInt(DEFAULT_HEADERS_TIMEOUT_MS),
        body_timeout_ms: PosInt(DEFAULT_BODY_TIMEOUT_MS),
        attempts: PosInt(DEFAULT_ATTEMPTS),
        max_in_flight: NonNegInt(DEFAULT_MAX_IN_FLIGHT),
        /** Worker response headers copied to the client (lower-case names). */
        forward_response_headers: Type.Array(Type.String({ pattern: '^[a-z0-9-]+$' }), {
          default: [...DEFAULT_FORWARD_RESPONSE_HEADERS],
        }),
      },
      { additionalProperties: false, default: {} },
    ),
    health: Type.Object(
      {
        interval_ms: NonNegInt(DEFAULT_HEALTH_INTERVAL_MS), // 0 = no active checks
        timeout_ms: PosInt(DEFAULT_HEALTH_TIMEOUT_MS),
        eject_after: PosInt(DEFAULT_EJECT_AFTER),
        readmit_after: PosInt(DEFAULT_READMIT_AFTER),
      },
      { additionalProperties: false, default: {} },
    ),
  },
  { additionalProperties: false },
);

export type GatewayConfig = Static<typeof ConfigSchema>;
export type ModelConfig = GatewayConfig['models'][number];
export type WorkerConfig = ModelConfig['workers'][number];
export type AuthKeyConfig = Static<typeof AuthKeySchema>;
