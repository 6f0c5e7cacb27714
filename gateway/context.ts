// What the routes share: config, fleet, metrics, auth, the pipeline per model and the hooks
// callers inject (GatewayDeps). Built once by server.ts.
import type { FastifyInstance } from 'fastify';
import type { LoggerOptions } from 'pino';
import type { Registry } from 'prom-client';
import type { ContextPipeline } from '../middleware/types.ts';
import type { Authenticator } from './auth.ts';
import type { GatewayConfig, ModelConfig } from './config/schema.ts';
import type { SpendLookup } from './limits/budget.ts';
import type { GatewayMetrics } from './metrics.ts';
import type { BodyMemo } from './body/body-memo.ts';
import type { AfterAnswer } from './proxy/after-answer.ts';
import type { RequestRecords } from './request-records.ts';
import type { Lifecycle, ShutdownHook } from './shutdown.ts';
import type { CacheSalts } from './tenancy/cache-salt.ts';
import type { Tracing } from './telemetry/tracing.ts';
import type { TenantSlots } from './limits/tenant-concurrency.ts';
import type { Fleet } from './upstream/fleet.ts';
import type { UsageEvent } from './usage-event.ts';
import { headerSessionId } from './ingress/harness-session.ts';

export interface GatewayDeps {
  /** The context pipeline of a model; default: passthrough (body unchanged). */
  pipelineFor?: (model: ModelConfig) => ContextPipeline;
  /** Called once per finished request, off the hot path; errors are swallowed (and logged). */
  onUsage?: (ev: UsageEvent) => void;
  /** pino options, or false for a silent gateway (tests, benchmarks). Default: info level. */
  logger?: LoggerOptions | boolean;
  /** prom-client Registry; default: a fresh one per gateway. */
  registry?: Registry;
  /** How many request records GET /v1/gateway/requests/:id can serve. */
  requestRecords?: number;
  /** Extra routes other parts plug in (report, breaks...); they run behind the same auth hook. */
  registerRoutes?: (app: FastifyInstance, ctx: GatewayContext) => void;
  /** Headers for a finished non-stream answer, computed before it is sent (x-ctxgate-cost-usd…). */
  responseHeaders?: (ev: UsageEvent) => Record<string, string>;
  /** USD spent by a tenant since an epoch-ms instant (the usage ledger); enables `budgets`. */
  spendSince?: SpendLookup;
  /** OpenTelemetry tracing (telemetry/tracing.ts tracingFromEnv); absent: no spans, no cost. */
  tracing?: Tracing;
  /** The after-answer queue (proxy/after-answer.ts); default: one run from a 0 ms timer. Tests pass one with their own scheduler. */
  afterAnswer?: AfterAnswer;
  /** How long a Redis answer may take before it counts as a Redis failure (the limiter's and the
   *  tenant slots' command timeout, the limiter's wait for its link, the salt secret's read at
   *  start and the stored Responses' commands). Default: each part's own. Tests on a loaded machine pass a generous one, so that a slow answer
   *  is never taken for a failure and a fallback that admits. */
  redisTimeoutMs?: number;
}

export interface GatewayContext {
  config: GatewayConfig;
  fleet: Fleet;
  metrics: GatewayMetrics;
  registry: Registry;
  authenticate: Authenticator;
  pipelines: Map<string, ContextPipeline>;
  records: RequestRecords;
  /** Each request's metrics, record and usage, filed after the next call went upstream; readers drain it first. */
  afterAnswer: AfterAnswer;
  /** Recent request bodies per tenant, to parse the next one incrementally (body/body-memo.ts). */
  bodies: BodyMemo;
  /** Per-tenant prefix-cache salts (sent upstream as cache_salt, seeding the block hashes). */
  salts: CacheSalts;
  /** Per-tenant in-flight cap (limits.max_concurrent_per_tenant). */
  tenantSlots: TenantSlots;
  onUsage?: (ev: UsageEvent) => void;
  responseHeaders?: (ev: UsageEvent) => Record<string, string>;
  tracing?: Tracing;
  /** GatewayDeps.redisTimeoutMs */
  redisTimeoutMs?: number;
  /** Set when the gateway is draining: new proxied requests get 503. */
  draining: boolean;
  /** In-flight requests (stopped at the shutdown deadline) and the close hooks. */
  lifecycle: Lifecycle;
  /** Registers a close hook run once at shutdown, after in-flight requests: flush, persist, quit. */
  onShutdown(fn: ShutdownHook, name?: string): void;
}

/** Default pipeline: forwards the body unchanged; the session id comes from a header when given. */
export const PASSTHROUGH_PIPELINE: ContextPipeline = {
  async process(body, ctx) {
    return { body, sessionId: headerSessionId(ctx.headers), receipts: [] };
  },
};
