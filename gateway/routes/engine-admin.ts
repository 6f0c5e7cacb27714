// Admin routes onto the engines' native endpoints, through each model's engine adapter:
//   POST /v1/gateway/models/:model/flush_cache   every worker drops its prefix cache (SGLang
//        /flush_cache, vLLM /reset_prefix_cache): for benchmarks that must start cold; the
//        routing policy forgets what its own index held for each worker that flushed;
//   GET  /v1/gateway/models/:model/server_info   each worker's serving settings (SGLang
//        /get_server_info);
//   POST /v1/gateway/models/:model/detokenize    {tokens} -> {text} on one healthy worker (vLLM
//        and SGLang /detokenize; vLLM answers {prompt}, SGLang {text}).
// A flavor without the endpoint answers 404 naming it. Worker failures here are reported per
// worker, never counted toward ejection (an admin call is not traffic).
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { GatewayError } from '../../middleware/errors.ts';
import { type Principal, requireAdmin } from '../auth.ts';
import type { GatewayContext } from '../context.ts';
import { type EngineAdapter, engineOf } from '../upstream/engines.ts';
import type { ModelRoute } from '../upstream/fleet.ts';
import type { Worker } from '../upstream/worker.ts';

/** An admin call to an engine waits this long at most. */
const ENGINE_ADMIN_TIMEOUT_MS = 10_000;
/** Longest engine answer kept (server_info is a few KB). */
const MAX_ENGINE_ANSWER_BYTES = 256 * 1024;
const MAX_DETOKENIZE_IDS = 1_000_000;

type Params = FastifyRequest<{ Params: { model: string } }>;

function target(
  gw: GatewayContext,
  req: Params,
  path: keyof Pick<EngineAdapter, 'flushCachePath' | 'serverInfoPath' | 'detokenizePath'>,
): { route: ModelRoute; engine: EngineAdapter; path: string } {
  requireAdmin(req.principal as Principal);
  const route = gw.fleet.get(req.params.model);
  if (!route) throw new GatewayError('model_not_found', `model '${req.params.model}' does not exist`, 'model');
  const engine = engineOf(route.config);
  const p = engine[path];
  if (!p)
    throw new GatewayError(
      'not_found',
      `engine flavor '${engine.flavor}' of '${route.config.name}' has no such endpoint`,
    );
  return { route, engine, path: p };
}

async function call(
  w: Worker,
  method: 'GET' | 'POST',
  path: string,
  body?: unknown,
): Promise<{ id: string; status: number; body?: unknown; error?: string }> {
  try {
    const res = await w.pool.request({
      method,
      path: w.basePath + path,
      headers: {
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        ...(w.apiKey ? { authorization: `Bearer ${w.apiKey}` } : {}),
      },
      body: body !== undefined ? JSON.stringify(body) : undefined,
      signal: AbortSignal.timeout(ENGINE_ADMIN_TIMEOUT_MS),
    });
    const text = (await res.body.text()).slice(0, MAX_ENGINE_ANSWER_BYTES);
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      // plain text (SGLang's "Cache flushed."): kept as text
    }
    return { id: w.id, status: res.statusCode, body: parsed };
  } catch (err) {
    return { id: w.id, status: 0, error: (err as { code?: string }).code ?? (err as Error).message };
  }
}

export function registerEngineAdminRoutes(app: FastifyInstance, gw: GatewayContext): void {
  app.post('/v1/gateway/models/:model/flush_cache', async (req: Params) => {
    const { route, engine, path } = target(gw, req, 'flushCachePath');
    const workers = await Promise.all(route.workers.map((w) => call(w, 'POST', path)));
    const flushed = (w: { status: number }): boolean => w.status >= 200 && w.status < 300;
    // The routing index must not keep predicting hits a flushed worker no longer has.
    const forget = route.policy.forgetWorker?.bind(route.policy);
    for (const w of workers) if (forget && flushed(w)) forget(w.id);
    return {
      model: route.config.name,
      flavor: engine.flavor,
      ok: workers.every(flushed),
      workers: workers.map((w) => ({
        id: w.id,
        status: w.status,
        routing_index_reset: forget !== undefined && flushed(w),
        ...(w.error ? { error: w.error } : {}),
      })),
    };
  });

  app.get('/v1/gateway/models/:model/server_info', async (req: Params) => {
    const { route, engine, path } = target(gw, req, 'serverInfoPath');
    const workers = await Promise.all(route.workers.map((w) => call(w, 'GET', path)));
    return { model: route.config.name, flavor: engine.flavor, workers };
  });

  app.post('/v1/gateway/models/:model/detokenize', async (req: Params) => {
    const { route, path } = target(gw, req, 'detokenizePath');
    const tokens = (req.body as { tokens?: unknown } | undefined)?.tokens;
    if (
      !Array.isArray(tokens) ||
      tokens.length > MAX_DETOKENIZE_IDS ||
      !tokens.every((t) => Number.isInteger(t) && t >= 0)
    )
      throw new GatewayError('invalid_request', 'tokens must be a list of token ids', 'tokens');
    const w = route.workers.find((x) => x.healthy);
    if (!w) throw new GatewayError('no_healthy_worker', `no healthy worker for model '${route.config.name}'`);
    const r = await call(w, 'POST', path, { model: route.config.upstream_model ?? route.config.name, tokens });
    const b = r.body as { text?: unknown; prompt?: unknown } | undefined;
    const text = typeof b?.text === 'string' ? b.text : typeof b?.prompt === 'string' ? b.prompt : undefined;
    if (r.status !== 200 || text === undefined)
      throw new GatewayError('upstream_bad_response', `worker ${w.id} did not detokenize (HTTP ${r.status})`);
    return { text, worker: w.id };
  });
}
