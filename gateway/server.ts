// Builds the gateway: Fastify app, auth, the raw-body JSON parser, routes, fleet, health checks.
// buildGateway() does not listen (tests use inject or listen themselves); startGateway() does.
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage } from 'node:http';
import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify';
import { Registry } from 'prom-client';
import type { ContextPipeline } from '../middleware/types.ts';
import { createAuthenticator, type Principal } from './auth.ts';
import type { GatewayConfig, ModelConfig } from './config/schema.ts';
import { DEFAULT_REQUEST_RECORDS } from './config/schema.ts';
import { PASSTHROUGH_PIPELINE, type GatewayContext, type GatewayDeps } from './context.ts';
import { GatewayError, toGatewayError } from '../middleware/errors.ts';
import { createMetrics } from './metrics.ts';
import { BodyMemo, type PendingBody } from './body/body-memo.ts';
import { readBody } from './body/read-body.ts';
import { countedSlots, installLimits } from './limits/index.ts';
import { createAdapters } from './ingress/index.ts';
import { openaiErrorBody } from './ingress/openai-chat.ts';
import { createResponseStore } from './ingress/responses-store.ts';
import { RequestRecords } from './request-records.ts';
import { RequestLog, withRedactedUrls } from './request-log.ts';
import { AfterAnswer } from './proxy/after-answer.ts';
import { registerAdminRoutes } from './routes/admin.ts';
import { registerEngineAdminRoutes } from './routes/engine-admin.ts';
import { registerIngressRoutes, type ErrorShaper } from './routes/ingress.ts';
import { lap, tick } from '../middleware/perf/stage-timers.ts';
import { drain, Lifecycle } from './shutdown.ts';
import { allWorkers, createFleet } from './upstream/fleet.ts';
import { closeGates } from './admission/gates.ts';
import { startHealthChecks, type HealthChecker } from './upstream/health.ts';
import { createCacheSalts } from './tenancy/cache-salt.ts';
import { configuredSecret, resolveSaltSecret } from './tenancy/salt-secret.ts';
import { ConfigError } from './config/load.ts';
import { checkListen } from './startup-checks.ts';
import { TenantConcurrency, type TenantSlots } from './limits/tenant-concurrency.ts';
import { SharedTenantConcurrency } from './limits/tenant-concurrency-redis.ts';
import { createLimiterRedis } from './limits/rate-limit.ts';

export type { GatewayDeps } from './context.ts';
export type { GatewayConfig, ModelConfig } from './config/schema.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** The request body as received (forwarded as-is when unchanged). */
    rawBody?: Buffer;
    /** The allocation `rawBody` starts, with spare bytes after it (body/read-body.ts): only the
     *  request path may write it, and only while nothing else holds `rawBody` (proxy/handle.ts). */
    rawRoom?: Buffer;
    /** The parsed body the memo may keep once the route accepted it (BodyMemo.keep). */
    pendingBody?: PendingBody;
    principal?: Principal;
  }
}

/** A content-type parser's completion callback. */
type ParserDone = (err: Error | null, body?: unknown) => void;

/** Anthropic clients send their key as `x-api-key`; it is checked like a bearer key. */
function apiKeyHeader(v: string | string[] | undefined): string | undefined {
  return typeof v === 'string' && v ? `Bearer ${v}` : undefined;
}

/** Routes that answer without a key: probes and scrapers. */
const OPEN_ROUTES = new Set(['/health', '/ready', '/metrics']);
/** How often Node checks request and header timeouts of open connections. */
const SERVER_TIMEOUT_CHECK_MS = 1_000;
/**
 * How long an idle client connection stays open (Node's keepAliveTimeout; Fastify's own default,
 * which a serverFactory server does not get). Node's 5 s is shorter than clients keep idle
 * sockets (undici, the SDKs), so a POST sent on a socket the server was closing failed with
 * ECONNRESET; clients do not retry a POST. Longer than theirs, the client closes first.
 */
export const KEEP_ALIVE_TIMEOUT_MS = 72_000;
const REQUEST_ID_RE = /^[\x21-\x7e]{1,128}$/;
/** How long upstream pools get to close gracefully at shutdown before being destroyed. */
const POOL_CLOSE_MS = 1_000;

export interface BuiltGateway {
  app: FastifyInstance;
  ctx: GatewayContext;
  health: HealthChecker;
  /** Drains in-flight requests (up to shutdown.deadline_ms), stops health checks, closes pools. */
  close(): Promise<void>;
}

/** The per-tenant in-flight cap: counted across replicas in Redis when redis.url is set. */
function tenantSlots(config: GatewayConfig, log: (msg: string) => void, redisTimeoutMs?: number): TenantSlots {
  const max = config.limits.max_concurrent_per_tenant;
  const url = config.redis?.url;
  if (max <= 0 || !url) return new TenantConcurrency(max);
  let lastLog = 0;
  const warn = (err: Error): void => {
    // Redis down is expected during failover; say so at most every 10 s.
    if (Date.now() - lastLog < 10_000) return;
    lastLog = Date.now();
    log(`per-tenant concurrency: redis unavailable (${err.message}); counting per replica meanwhile`);
  };
  const redis = createLimiterRedis(url, warn, redisTimeoutMs);
  const shared = new SharedTenantConcurrency(redis, max, { onFallback: warn });
  return {
    acquire: (t) => shared.acquire(t),
    linkUp: () => redis.status === 'ready',
    close: () => {
      shared.close();
      redis.quit().catch(() => redis.disconnect());
    },
  };
}

export function buildGateway(config: GatewayConfig, deps: GatewayDeps = {}): BuiltGateway {
  const registry = deps.registry ?? new Registry();
  const metrics = createMetrics(registry, { defaultMetrics: !deps.registry });
  const fleet = createFleet(config, metrics);
  const lifecycle = new Lifecycle();
  const pipelines = new Map<string, ContextPipeline>();
  for (const m of config.models) pipelines.set(m.name, deps.pipelineFor?.(m as ModelConfig) ?? PASSTHROUGH_PIPELINE);
  const ctx: GatewayContext = {
    config,
    fleet,
    metrics,
    registry,
    authenticate: createAuthenticator(config.auth),
    pipelines,
    records: new RequestRecords(deps.requestRecords ?? DEFAULT_REQUEST_RECORDS),
    afterAnswer: deps.afterAnswer ?? new AfterAnswer(),
    bodies: new BodyMemo({ maxElements: config.limits.max_messages }),
    salts: createCacheSalts(config.tenancy),
    tenantSlots: countedSlots(
      tenantSlots(config, (msg) => app.log.warn(msg), deps.redisTimeoutMs),
      { metrics },
    ),
    onUsage: deps.onUsage,
    responseHeaders: deps.responseHeaders,
    tracing: deps.tracing,
    redisTimeoutMs: deps.redisTimeoutMs,
    draining: false,
    lifecycle,
    onShutdown: (fn, name) => lifecycle.onShutdown(fn, name),
  };

  const app = Fastify({
    logger:
      deps.logger === false
        ? false
        : withRedactedUrls(typeof deps.logger === 'object' ? deps.logger : { level: 'info' }),
    // One line per request at info ("request completed", with the request's fields), not two.
    logController: new RequestLog(),
    bodyLimit: config.limits.max_body_bytes,
    // Slow clients (slowloris headers, trickled bodies) are cut by the server: Node checks these
    // timeouts every connectionsCheckingInterval, so that interval must be short too.
    serverFactory: (handler) =>
      createServer(
        {
          requestTimeout: config.listen.request_timeout_ms,
          headersTimeout: Math.min(config.listen.headers_timeout_ms, config.listen.request_timeout_ms),
          connectionsCheckingInterval: Math.min(SERVER_TIMEOUT_CHECK_MS, config.listen.headers_timeout_ms),
        },
        handler,
      ),
    genReqId: (req: IncomingMessage) => {
      const h = req.headers['x-request-id'];
      return typeof h === 'string' && REQUEST_ID_RE.test(h) ? h : randomUUID();
    },
  });

  app.server.maxConnections = config.listen.max_connections;
  app.server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
  // Fastify resets these on the server it is given; set them again.
  app.server.requestTimeout = config.listen.request_timeout_ms;
  app.server.headersTimeout = Math.min(config.listen.headers_timeout_ms, config.listen.request_timeout_ms);

  app.removeContentTypeParser('application/json');
  // Parsed incrementally against the tenant's recent bodies (body/body-memo.ts): exactly JSON.parse.
  // A body is kept only when its route accepts it (proxy/handle.ts). Read as Node delivered it when
  // it came in one chunk, else copied with spare room after it (body/read-body.ts), for the upstream
  // body's splice (proxy/body.ts).
  const bodies = ctx.bodies;
  const bodyLimit = config.limits.max_body_bytes;
  const parseBody = (req: FastifyRequest, buf: Buffer, room: Buffer | undefined, done: ParserDone): void => {
    const t = tick();
    req.rawBody = buf;
    req.rawRoom = room;
    const maxDepth = config.limits.max_json_depth;
    const out = bodies.parse(req.principal?.tenant, buf, maxDepth);
    if (out.error === 'depth') {
      done(
        new GatewayError(
          'invalid_request',
          `request body nests deeper than ${maxDepth} levels (limits.max_json_depth)`,
        ),
        undefined,
      );
      return;
    }
    if (out.error === 'json') {
      done(new GatewayError('invalid_json', 'request body is not valid JSON'), undefined);
      return;
    }
    req.pendingBody = out.pending;
    lap('body_parse', t);
    done(null, out.value);
  };
  app.addContentTypeParser('application/json', (req, payload, done) => {
    readBody(payload, req.headers['content-length'], bodyLimit, (err, buf, room) => {
      if (err) {
        done(err, undefined);
        return;
      }
      // Called from the payload's 'end' event: a throw must reach the error handler, not the process.
      try {
        parseBody(req, buf as Buffer, room, done);
      } catch (e) {
        done(e as Error, undefined);
      }
    });
  });

  // A callback hook, not an async one: no promise and no microtask hop per request. A throw (a
  // refused key) reaches the error handler as a rejection would (fastify's hook runner catches it).
  app.addHook('onRequest', (req, reply, done) => {
    reply.header('x-request-id', req.id);
    const url = req.routeOptions.url;
    if (url !== undefined && !OPEN_ROUTES.has(url))
      req.principal = ctx.authenticate(req.headers.authorization ?? apiKeyHeader(req.headers['x-api-key']));
    done();
  });

  // Errors answer in the API of the route they happened on (Anthropic's shape on /v1/messages...).
  let shapers = new Map<string, ErrorShaper>();
  app.setErrorHandler((err, req, reply) => {
    // A client that left is routine, not a gateway fault: one info line, no stack. Its socket
    // decides: an ECONNRESET from Redis or a worker while the client still waits is ours to answer.
    const code = String((err as { code?: unknown }).code ?? (err as Error).name);
    const socket = req.raw.socket;
    if (reply.raw.destroyed || !socket || socket.destroyed || !socket.writable) {
      req.log.info({ code }, 'client closed the connection');
      if (!reply.raw.destroyed) reply.raw.destroy();
      return;
    }
    const ge = toGatewayError(err);
    if (ge.status >= 500 && ge.code === 'internal_error') req.log.error({ err }, 'internal error');
    for (const [k, v] of Object.entries(ge.headers)) reply.header(k, v);
    reply.code(ge.status).send((shapers.get(req.routeOptions.url ?? '') ?? openaiErrorBody)(ge));
  });
  app.setNotFoundHandler((req, reply) => {
    reply.code(404).send(new GatewayError('not_found', `no route ${req.method} ${req.url.split('?')[0]}`).toBody());
  });

  const r = config.responses;
  const responses = createResponseStore(
    { ttlSeconds: r.ttl_s, maxEntryBytes: r.max_entry_bytes, maxBytes: r.max_bytes },
    config.redis?.url,
    deps.redisTimeoutMs,
  );
  lifecycle.onShutdown(() => responses.close(), 'responses-store');
  lifecycle.onShutdown(() => ctx.tenantSlots.close?.(), 'tenant-slots');
  // After in-flight requests, so their spans are exported too.
  if (deps.tracing) lifecycle.onShutdown(() => deps.tracing!.shutdown(), 'tracing');
  const adapters = createAdapters(responses);
  const spendSince = deps.spendSince;
  installLimits(
    app,
    ctx,
    adapters.map((a) => a.path),
    // the budget counts every answered request, its usage still queued included
    spendSince &&
      ((tenant, since) => {
        ctx.afterAnswer.drain();
        return spendSince(tenant, since);
      }),
  );
  shapers = registerIngressRoutes(app, ctx, adapters, responses);
  registerAdminRoutes(app, ctx);
  registerEngineAdminRoutes(app, ctx);
  deps.registerRoutes?.(app, ctx);
  // Registered last, so it runs first (hooks run in reverse): the queued accounting reaches the
  // usage ledger and the captures before they close.
  lifecycle.onShutdown(() => ctx.afterAnswer.drain(), 'after-answer');

  const workers = allWorkers(fleet);
  const health = startHealthChecks(workers, config.health, app.log);
  let closing: Promise<void> | undefined;
  const close = (): Promise<void> =>
    (closing ??= (async () => {
      ctx.draining = true;
      // late binding's held calls were never sent: answered now, not at the drain deadline
      closeGates(
        fleet.values(),
        () =>
          new GatewayError(
            'shutting_down',
            'the gateway is shutting down; the call waited for a worker and was not sent: retry',
            null,
            { 'retry-after': '1' },
          ),
      );
      await health.stop();
      const r = await drain(app, lifecycle, config.shutdown.deadline_ms);
      if (r.aborted)
        app.log.warn({ aborted: r.aborted }, 'shutdown deadline reached; in-flight requests ended with an error');
      for (const err of r.hookErrors) app.log.error({ err: err.message }, 'close hook failed');
      // Aborted upstream requests settle at once; a pool that still waits is destroyed.
      const pools = Promise.all(workers.map((w) => w.close()));
      const late = await Promise.race([
        pools.then(() => false),
        new Promise<boolean>((res) => setTimeout(() => res(true), POOL_CLOSE_MS).unref()),
      ]);
      if (late) await Promise.all(workers.map((w) => w.pool.destroy().catch(() => undefined)));
    })());
  return { app, ctx, health, close };
}

export interface StartedGateway {
  url: string;
  app: FastifyInstance;
  ctx: GatewayContext;
  /** Runs one round of active health checks now. */
  checkHealth(): Promise<void>;
  close(): Promise<void>;
}

export async function startGateway(config: GatewayConfig, deps: GatewayDeps = {}): Promise<StartedGateway> {
  checkListen(config);
  const built = buildGateway(config, deps);
  try {
    // Replicas derive one salt per tenant: a configured secret, else one shared through Redis.
    if (!configuredSecret(config.tenancy)) {
      const s = await resolveSaltSecret(config, process.env, deps.redisTimeoutMs);
      built.ctx.salts = createCacheSalts(config.tenancy, process.env, s.secret);
      if (s.warning && config.auth.mode === 'keys') built.app.log.warn({ source: s.source }, s.warning);
    }
    await built.app.listen({ host: config.listen.host, port: config.listen.port });
  } catch (err) {
    await built.close();
    const code = (err as { code?: string }).code;
    if (code === 'EADDRINUSE' || code === 'EACCES' || code === 'EADDRNOTAVAIL') {
      const why =
        code === 'EADDRINUSE'
          ? 'is already in use'
          : code === 'EACCES'
            ? 'needs privileges this process lacks'
            : 'is not an address of this machine';
      throw new ConfigError(
        code === 'EADDRNOTAVAIL' ? 'listen.host' : 'listen.port',
        `config: cannot listen on ${config.listen.host}:${config.listen.port}: it ${why} (listen.host / listen.port, or --host / --port)`,
      );
    }
    throw err;
  }
  const addr = built.app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : config.listen.port;
  const host = config.listen.host.includes(':') ? `[${config.listen.host}]` : config.listen.host;
  if (config.health.interval_ms > 0) void built.health.checkAll();
  return {
    url: `http://${host}:${port}`,
    app: built.app,
    ctx: built.ctx,
    checkHealth: built.health.checkAll,
    close: built.close,
  };
}
