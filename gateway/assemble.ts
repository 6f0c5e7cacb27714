// The whole product from one validated config: the context pipeline per model (layout stages, then
// stabilise → ledger → compaction), the session store (memory, or Redis with a local fallback),
// the artifact store, traffic capture, usage accounting with its ledger and report route, and the
// session routes (breaks, invalidate, artifacts). `ctxgate serve`, the replay fleet, the demo and
// the chaos bench all start the gateway through here, so what is benchmarked is what is served.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { FsArtifactStore, MemoryArtifactStore, type ArtifactStore } from '../middleware/artifacts/store.ts';
import { createCompactionStage } from '../middleware/compaction/stage.ts';
import { createLedgerStage } from '../middleware/ledger/stage.ts';
import { createPipeline } from '../middleware/pipeline.ts';
import { registerArtifactRoutes } from '../middleware/routes/artifacts.ts';
import { registerBreakRoutes } from '../middleware/routes/breaks.ts';
import { registerInvalidateRoutes } from '../middleware/routes/invalidate.ts';
import { MemorySessionStore } from '../middleware/session/memory-store.ts';
import { RedisSessionStore } from '../middleware/session/redis-store.ts';
import { ResilientSessionStore } from '../middleware/session/resilient-store.ts';
import type { SessionStore } from '../middleware/session/store.ts';
import { startScraper } from '../kvplanner/load-signals.ts';
import { shareIndex } from '../kvplanner/shared-index-redis.ts';
import { createStabiliseStage } from '../middleware/stabilise/stage.ts';
import type { Stage } from '../middleware/stage.ts';
import type { ContextPipeline } from '../middleware/types.ts';
import type { Principal } from './auth.ts';
import { createCapture, type Capture } from './capture/index.ts';
import type { GatewayConfig, ModelConfig } from './config/schema.ts';
import { PASSTHROUGH_PIPELINE, type GatewayContext, type GatewayDeps } from './context.ts';
import { startGateway } from './server.ts';
import { createReporting, type Reporting, type ReportingOptions } from './usage/reporting.ts';

export interface AssembleOptions {
  /** pino options or false (tests, benchmarks). */
  logger?: GatewayDeps['logger'];
  registry?: GatewayDeps['registry'];
  /** false: no usage accounting (no ledger file, no report route). Default: on. */
  reporting?: false | ReportingOptions;
  /** Share one session store (tests of restart equality pass their own). */
  store?: SessionStore;
  artifacts?: ArtifactStore;
}

export interface Assembled {
  deps: GatewayDeps;
  store: SessionStore;
  artifacts: ArtifactStore;
  reporting?: Reporting;
  captures: Map<string, Capture>;
  /** Releases what assemble opened (idempotent); also registered as a gateway shutdown hook. */
  close(): Promise<void>;
}

const tenantOf = (req: FastifyRequest): string | undefined => (req as FastifyRequest & { principal?: Principal }).principal?.tenant;

function openStore(config: GatewayConfig): SessionStore {
  const local = new MemorySessionStore({ maxSessions: config.limits.max_sessions, maxBytes: config.limits.max_session_bytes });
  const url = config.redis?.url;
  if (!url) return local;
  return new ResilientSessionStore(new RedisSessionStore({ url }), { local });
}

/** Context-chain stages after the layout stages; compaction only where the model has a budget M*. */
export function chainStages(m: Pick<ModelConfig, 'budget_tokens'>, artifacts?: ArtifactStore): Stage[] {
  const stages: Stage[] = [createStabiliseStage(), createLedgerStage()];
  if (m.budget_tokens) stages.push(createCompactionStage({ budgetTokens: m.budget_tokens, artifacts }));
  return stages;
}

/** Records the agent's original body (before any rewrite) under the session the pipeline chose. */
function withCapture(inner: ContextPipeline, capture: Capture): ContextPipeline {
  return {
    async process(body, ctx) {
      const result = await inner.process(body, ctx);
      capture.record(ctx.tenant, result.sessionId, body);
      return result;
    },
    observe: inner.observe?.bind(inner),
  };
}

export function assemble(config: GatewayConfig, opts: AssembleOptions = {}): Assembled {
  const store = opts.store ?? openStore(config);
  const artifacts = opts.artifacts ?? (config.artifacts.dir ? new FsArtifactStore(config.artifacts.dir) : new MemoryArtifactStore({ maxBytes: config.artifacts.max_bytes }));
  const reporting = opts.reporting === false ? undefined : createReporting(config, opts.reporting);
  const captures = new Map<string, Capture>();

  const pipelineFor = (m: ModelConfig): ContextPipeline => {
    // Without a tokenizer nothing can be rendered engine-exactly: forward untouched.
    if (!m.tokenizer) return PASSTHROUGH_PIPELINE;
    let p: ContextPipeline = createPipeline({
      model: m.name,
      tokenizer: m.tokenizer,
      chatTemplateFile: m.chat_template,
      layout: m.layout,
      blockSize: m.block_size,
      transforms: m.transforms,
      store,
      extraStages: m.layout === 'ctxgate' ? chainStages(m, artifacts) : [],
    });
    if (m.capture.enabled && m.capture.sample_rate > 0) {
      const capture = createCapture({ dir: m.capture.dir, sampleRate: m.capture.sample_rate, maxBytes: m.capture.max_bytes });
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
    })());

  const registerRoutes = (app: FastifyInstance, ctx: GatewayContext): void => {
    reporting?.deps.registerRoutes(app, ctx);
    void app.register(async (scope) => {
      await registerBreakRoutes(scope, { store, tenantOf });
      await registerInvalidateRoutes(scope, { store, authTenant: tenantOf });
      await registerArtifactRoutes(scope, { artifacts, authTenant: tenantOf });
    });
    for (const [model, route] of ctx.fleet) {
      // Replicas sharing Redis learn each other's prefix index and session homes (ctxgate policy).
      const shared = config.redis?.url ? shareIndex(route.policy, { redisUrl: config.redis.url, model }) : undefined;
      if (shared) ctx.onShutdown(() => shared.stop(), `shared-index:${model}`);
      if (route.config.scrape_metrics_ms > 0) {
        const scraper = startScraper(() => route.workers, route.config.scrape_metrics_ms);
        ctx.onShutdown(() => scraper.stop(), `scraper:${model}`);
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
  };
  return { deps, store, artifacts, reporting, captures, close };
}

/** startGateway with everything assemble() wires; close() also releases stores and the ledger. */
export async function startAssembledGateway(config: GatewayConfig, opts: AssembleOptions = {}) {
  const a = assemble(config, opts);
  try {
    const gw = await startGateway(config, a.deps);
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
