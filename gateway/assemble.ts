// The whole product from one validated config: the context pipeline per model (the one stage list
// of middleware/chain.ts, configured by chainSpecOf), the session store (memory, or Redis with a local fallback),
// the artifact store, traffic capture, usage accounting with its ledger and report route, and the
// session routes (breaks, invalidate, artifacts). `ctxgate serve`, the replay fleet, the demo and
// the chaos bench all start the gateway through here, so what is benchmarked is what is served.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { FsArtifactStore, MemoryArtifactStore, type ArtifactStore } from '../middleware/artifacts/store.ts';
import type { ChainSpec } from '../middleware/chain.ts';
import { createPipeline } from '../middleware/pipeline.ts';
import { registerArtifactRoutes } from '../middleware/routes/artifacts.ts';
import { registerBreakRoutes } from '../middleware/routes/breaks.ts';
import { registerInvalidateRoutes } from '../middleware/routes/invalidate.ts';
import { MemorySessionStore } from '../middleware/session/memory-store.ts';
import { RedisSessionStore } from '../middleware/session/redis-store.ts';
import { ResilientSessionStore } from '../middleware/session/resilient-store.ts';
import type { SessionStore } from '../middleware/session/store.ts';
import { TenantQuotaStore } from '../middleware/session/tenant-quota-store.ts';
import { startScraper } from '../kvplanner/load-signals.ts';
import { gateFor } from './admission/gates.ts';
import { engineOf } from './upstream/engines.ts';
import { shareIndex } from '../kvplanner/shared-index-redis.ts';
import { startKvFeeds } from './kv-events/subscriber.ts';
import type {
  ChatRequest,
  ContextPipeline,
  PipelineContext,
  PipelineOutcome,
  PipelineResult,
} from '../middleware/types.ts';
import type { Principal } from './auth.ts';
import { createCapture, type Capture, type CaptureMeta } from './capture/index.ts';
import type { GatewayConfig, ModelConfig } from './config/schema.ts';
import { PASSTHROUGH_PIPELINE, type GatewayContext, type GatewayDeps } from './context.ts';
import { startGateway } from './server.ts';
import { tracingFromEnv, type Tracing } from './telemetry/tracing.ts';
import { rateLimitedWarn } from './telemetry/warn-every.ts';
import { checkModels } from './startup-checks.ts';
import { createRenderPool, type RenderPool, type WarmProbe } from './workers-pool/pool.ts';
import { onFastMismatch } from '../middleware/tokens/hf-handle.ts';
import { createReporting, type Reporting, type ReportingOptions } from './accounting/routes/reporting.ts';

export interface AssembleOptions {
  /** pino options or false (tests, benchmarks). */
  logger?: GatewayDeps['logger'];
  registry?: GatewayDeps['registry'];
  /** false: no usage accounting (no ledger file, no report route). Default: on. */
  reporting?: false | ReportingOptions;
  /** Share one session store (tests of restart equality pass their own). */
  store?: SessionStore;
  artifacts?: ArtifactStore;
  /** Sees each pipeline run: the client's body and what goes upstream (benchmarks check them with
   * middleware/lossless/check.ts). Called synchronously; must not throw or mutate. */
  tap?: (clientBody: ChatRequest, result: PipelineResult, ctx: PipelineContext) => void;
  /** Tracing to use; default: from the OTEL_* environment; null: none. */
  tracing?: Tracing | null;
  /** The render pool threads' entry (tests pass one that ends its thread on a marked prompt). */
  renderThread?: string;
  /** GatewayDeps.redisTimeoutMs, also for the session store and the shared index (tests). */
  redisTimeoutMs?: number;
}

export interface Assembled {
  deps: GatewayDeps;
  store: SessionStore;
  artifacts: ArtifactStore;
  reporting?: Reporting;
  captures: Map<string, Capture>;
  /** Threads rendering and tokenising big calls (absent when `render_pool.threads` is 0). */
  renderPool?: RenderPool;
  /** Releases what assemble opened (idempotent); also registered as a gateway shutdown hook. */
  close(): Promise<void>;
}

/** A stalled or lost Redis fails every session call: one warning per this long is enough. */
const SHARED_INDEX_WARN_EVERY_MS = 10_000;
/** At most one warning per model this often for engines whose /metrics fails (the rest counted). */
const SCRAPE_WARN_EVERY_MS = 10_000;

const tenantOf = (req: FastifyRequest): string | undefined =>
  (req as FastifyRequest & { principal?: Principal }).principal?.tenant;

/** Tenants sessions can belong to: the configured keys' tenants, or the one open tenant. */
export function tenantCount(config: GatewayConfig): number {
  return config.auth.mode === 'keys' ? new Set(config.auth.keys.map((k) => k.tenant)).size : 1;
}

/**
 * limits.max_sessions and limits.max_session_bytes are per tenant (TenantQuotaStore, LRU within
 * the tenant). The local memory store holds the sum of all quotas, so its own overall LRU never
 * evicts one tenant's session to make room for another's: memory stays bounded by config
 * (quota × configured tenants), never by what a caller sends.
 */
function openStore(config: GatewayConfig, redisTimeoutMs?: number): SessionStore {
  const tenants = tenantCount(config);
  const { max_sessions: maxSessions, max_session_bytes: maxBytes } = config.limits;
  const local = new MemorySessionStore({ maxSessions: maxSessions * tenants, maxBytes: maxBytes * tenants });
  const url = config.redis?.url;
  const inner = url
    ? new ResilientSessionStore(
        new RedisSessionStore({ url, readCacheEntries: maxSessions * tenants, commandTimeoutMs: redisTimeoutMs }),
        { local, timeoutMs: redisTimeoutMs, versionsPerTenant: maxSessions },
      )
    : local;
  return new TenantQuotaStore(inner, { maxSessions, maxBytes, maxTenants: tenants });
}

/** What a model's config says about its context chain: the one mapping from config to chain,
 * used by serve, `bench replay` (through assemble) and `bench strategies` alike. */
export function chainSpecOf(m: ModelConfig, config: Pick<GatewayConfig, 'limits' | 'session_state'>): ChainSpec {
  return {
    layout: m.layout,
    transforms: m.transforms,
    budgetTokens: m.budget_tokens,
    maxToolOutputBytes: config.limits.max_tool_output_bytes,
    ledgerWriteVersion: config.session_state.ledger_write_version,
  };
}

/**
 * Records the agent's original body (before any rewrite) under the session the pipeline chose,
 * once the worker answered, so the line carries the worker's usage as `_meta.recorded_usage`.
 * The original body rides from process() to observe() in a WeakMap keyed by the result object
 * (the gateway hands observe the very object process returned): nothing to bound, and an
 * exchange that never reaches observe leaves nothing behind. Lines are written in completion
 * order, which is turn order for an agent that waits for each answer.
 */
function withCapture(inner: ContextPipeline, capture: Capture): ContextPipeline {
  const originals = new WeakMap<PipelineResult, ChatRequest>();
  return {
    chain: inner.chain,
    async process(body, ctx) {
      const result = await inner.process(body, ctx);
      originals.set(result, body);
      return result;
    },
    observe(result, outcome, ctx) {
      try {
        inner.observe?.(result, outcome, ctx);
      } finally {
        const body = originals.get(result);
        if (body) {
          originals.delete(result);
          capture.record(ctx.tenant, result.sessionId, body, recordedUsage(outcome), ctx.clientBody);
        }
      }
    },
  };
}

function withTap(inner: ContextPipeline, tap: NonNullable<AssembleOptions['tap']>): ContextPipeline {
  return {
    chain: inner.chain,
    async process(body, ctx) {
      const result = await inner.process(body, ctx);
      tap(body, result, ctx);
      return result;
    },
    observe: inner.observe ? (result, outcome, ctx) => inner.observe!(result, outcome, ctx) : undefined,
  };
}

/** The worker's usage when it reported any (a failed or usage-less answer records none). */
function recordedUsage(o: PipelineOutcome): CaptureMeta | undefined {
  if (o.promptTokens === undefined) return undefined;
  return {
    recorded_usage: {
      prompt_tokens: o.promptTokens,
      cached_tokens: o.cachedTokens ?? 0,
      completion_tokens: o.completionTokens ?? 0,
    },
  };
}

export function assemble(config: GatewayConfig, opts: AssembleOptions = {}): Assembled {
  const store = opts.store ?? openStore(config, opts.redisTimeoutMs);
  const artifacts =
    opts.artifacts ??
    (config.artifacts.dir
      ? new FsArtifactStore(config.artifacts.dir)
      : new MemoryArtifactStore({ maxBytes: config.artifacts.max_bytes }));
  const reporting = opts.reporting === false ? undefined : createReporting(config, opts.reporting);
  const captures = new Map<string, Capture>();
  // One pool for every model: threads load each model's tokenizer on its first job.
  const renderPool = createRenderPool(config.render_pool, opts.renderThread);

  const pipelineFor = (m: ModelConfig): ContextPipeline => {
    // Without a tokenizer nothing can be rendered engine-exactly: forward untouched.
    if (!m.tokenizer) return PASSTHROUGH_PIPELINE;
    let p: ContextPipeline = createPipeline({
      ...chainSpecOf(m, config),
      model: m.name,
      tokenizer: m.tokenizer,
      chatTemplateFile: m.chat_template,
      blockSize: m.block_size,
      store,
      // A session the store no longer holds needs no last call here: memory bounded by the same quota.
      maxLocalCalls: config.limits.max_sessions * tenantCount(config),
      artifacts,
      offload: renderPool,
    });
    if (opts.tap) p = withTap(p, opts.tap);
    if (m.capture.enabled && m.capture.sample_rate > 0) {
      const capture = createCapture({
        dir: m.capture.dir,
        sampleRate: m.capture.sample_rate,
        maxBytes: m.capture.max_bytes,
      });
      captures.set(m.name, capture);
      p = withCapture(p, capture);
    }
    return p;
  };

  let closing: Promise<void> | undefined;
  const close = (): Promise<void> =>
    (closing ??= (async () => {
      await Promise.allSettled([...captures.values()].map((c) => c.close()));
      await reporting?.close();
      await store.close();
      await renderPool?.close();
    })());

  const registerRoutes = (app: FastifyInstance, ctx: GatewayContext): void => {
    reporting?.deps.registerRoutes(app, ctx);
    // The fast path switches itself off on a mismatch (ids stay the library's): operators hear of it once.
    const stopMismatchWarn = onFastMismatch((m) =>
      app.log.warn(
        { component: 'tokens', tokenizer: m.tokenizer, chars: m.chars, reason: m.reason },
        'tokenizer fast path gave other ids than the library: switched off for this tokenizer',
      ),
    );
    ctx.onShutdown(() => stopMismatchWarn(), 'fast-mismatch-warn');
    void app.register(async (scope) => {
      await registerBreakRoutes(scope, { store, tenantOf });
      await registerInvalidateRoutes(scope, {
        store,
        authTenant: tenantOf,
        ledgerWriteVersion: config.session_state.ledger_write_version,
      });
      await registerArtifactRoutes(scope, { artifacts, authTenant: tenantOf });
    });
    for (const [model, route] of ctx.fleet) {
      // Replicas sharing Redis learn each other's prefix index and session homes (ctxgate policy).
      const warn = rateLimitedWarn(app.log.child({ component: 'shared-index', model }), SHARED_INDEX_WARN_EVERY_MS);
      const shared = config.redis?.url
        ? shareIndex(route.policy, {
            redisUrl: config.redis.url,
            model,
            // spread over the defaults: an undefined here would mean no timeout at all
            ...(opts.redisTimeoutMs ? { commandTimeoutMs: opts.redisTimeoutMs } : {}),
            onError: (err, op) => {
              ctx.metrics.sharedIndexErrors.inc({ model, op });
              warn(`shared index Redis ${op} failed (routing goes on locally): ${err.message}`);
            },
          })
        : undefined;
      if (shared) {
        route.placement = shared;
        ctx.onShutdown(() => shared.stop(), `shared-index:${model}`);
      }
      // late binding's gate, seen by operators: what it did with each call, how long held calls waited
      const gate = gateFor(route);
      if (gate) ctx.metrics.admissionHeld.set({ model }, 0);
      if (gate)
        gate.onOutcome = (outcome, waitedMs) => {
          const label =
            outcome === 'spilledFull' ? 'spilled_full' : outcome === 'spilledDeadline' ? 'spilled_deadline' : outcome;
          // bound children (metrics-children.ts): every call passes here, most as passed or bound
          const c = ctx.metrics.perCall;
          c.admissionOutcomes.at(model, label).inc();
          if (waitedMs !== undefined) c.admissionWait.at(model, label).observe(waitedMs / 1000);
          // passed and bound calls leave the queue as it was (the per-call path: one series touched)
          if (outcome !== 'passed' && outcome !== 'bound') c.admissionHeld.at(model).set(gate.size);
        };
      // engines' KV events feed the precise index of workers with `kv_events`
      const feeds = startKvFeeds(route, ctx.metrics, app.log.child({ component: 'kv-events' }));
      if (feeds.length) ctx.onShutdown(() => feeds.forEach((f) => f.stop()), `kv-events:${model}`);
      if (route.config.scrape_metrics_ms > 0) {
        const log = app.log.child({ component: 'engine-metrics', model });
        const missing = ctx.metrics.engineSignalsMissing;
        const scrapeWarn = rateLimitedWarn(log, SCRAPE_WARN_EVERY_MS);
        const scraper = startScraper(() => route.workers, route.config.scrape_metrics_ms, {
          names: engineOf(route.config).metrics,
          onScrape: gate ? () => gate.wake() : undefined,
          // a late-binding model alone in front of its fleet sends no GETs while it has nothing in
          // flight or held (the overhead bench's idle process, any quiet gateway): then no one else
          // loads its engines. An arrival model that set scrape_metrics_ms polls as configured (its
          // policy reads the engines' counts at arrival), and so do replicas sharing Redis (another
          // replica's calls load the same engines while this one is idle).
          active:
            gate && !config.redis?.url ? () => gate.size > 0 || route.workers.some((w) => w.inFlight > 0) : undefined,
          // an engine that does not answer (refused, reset, timed out): reported, rate-limited
          onError: (w, err) =>
            scrapeWarn(`worker ${w.id}: GET /metrics failed (${err.message}); no engine load signals until it answers`),
          onNoSignals: (w, reason) => {
            missing.set({ model, worker: w.id }, 1);
            log.warn(
              `worker ${w.id}: no engine load signals (${reason}); asked again with backoff${gate ? ', late binding treats it as able (as at arrival)' : ''}`,
            );
          },
          onSignals: (w) => {
            missing.set({ model, worker: w.id }, 0);
            log.info(`worker ${w.id}: engine load signals again`);
          },
        });
        ctx.onShutdown(() => scraper.stop(), `scraper:${model}`);
        if (gate) {
          // nothing is scraped at start (an idle gateway stays idle): the first calls wait for the
          // first round, asked for at once, instead of going as if every worker could admit
          gate.signalsPending = () => !scraper.scraped;
          gate.onPending = () => void scraper.scrapeOnce();
        }
      }
    }
    ctx.onShutdown(() => close(), 'assemble');
  };

  const deps: GatewayDeps = {
    logger: opts.logger,
    registry: opts.registry,
    pipelineFor,
    onUsage: reporting?.deps.onUsage,
    spendSince: reporting?.deps.spendSince,
    responseHeaders: reporting ? (ev) => reporting.headersFor(ev) : undefined,
    registerRoutes,
    redisTimeoutMs: opts.redisTimeoutMs,
  };
  return { deps, store, artifacts, reporting, captures, renderPool, close };
}

/** Each distinct tokenizer and chat template of the models, for the render pool's start-up check. */
function warmProbes(config: GatewayConfig): WarmProbe[] {
  const seen = new Set<string>();
  const probes: WarmProbe[] = [];
  for (const [i, m] of config.models.entries()) {
    if (!m.tokenizer) continue;
    const key = `${m.tokenizer}\u0000${m.chat_template ?? ''}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const field = m.chat_template ? `models[${i}].chat_template` : `models[${i}].tokenizer`;
    probes.push({ model: m.name, field, tokenizer: m.tokenizer, chatTemplateFile: m.chat_template });
  }
  return probes;
}

/** startGateway with everything assemble() wires; close() also releases stores and the ledger. */
export async function startAssembledGateway(config: GatewayConfig, opts: AssembleOptions = {}) {
  await checkModels(config);
  const a = assemble(config, opts);
  try {
    // Every pool thread starts and test-renders each model now: a thread that cannot fails start-up
    // (exit 2 naming render_pool.threads), not the first big call, which also no longer pays for it.
    await a.renderPool?.warm(warmProbes(config));
    // The OTel SDK is imported only when the environment configures an exporter.
    const tracing = opts.tracing === undefined ? await tracingFromEnv(process.env) : opts.tracing;
    const gw = await startGateway(config, tracing ? { ...a.deps, tracing } : a.deps);
    return {
      ...gw,
      assembled: a,
      close: async () => {
        await gw.close();
        await a.close();
      },
    };
  } catch (err) {
    await a.close();
    throw err;
  }
}
