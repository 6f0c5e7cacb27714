// Operational routes: liveness, readiness, metrics, the model list, worker state and request
// records. /health, /ready and /metrics are open (probes and scrapers carry no keys).
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { requireAdmin, type Principal } from '../auth.ts';
import type { GatewayContext } from '../context.ts';
import { GatewayError } from '../../middleware/errors.ts';

const STARTED = Math.floor(Date.now() / 1000);

export function registerAdminRoutes(app: FastifyInstance, gw: GatewayContext): void {
  app.get('/health', async () => ({ status: 'ok' }));

  // Ready once every model has a worker that has answered (a passed health check or a served request) and is
  // not ejected: before the first check round nothing is known, so the answer is 503, not an optimistic 200.
  app.get('/ready', async (_req, reply) => {
    const models: Record<string, { healthy: number; workers: number; unchecked: number }> = {};
    let ready = !gw.draining;
    for (const [name, r] of gw.fleet) {
      const healthy = r.workers.filter((w) => w.healthy && w.verified).length;
      const unchecked = r.workers.filter((w) => !w.verified).length;
      models[name] = { healthy, workers: r.workers.length, unchecked };
      if (healthy === 0) ready = false;
    }
    reply.code(ready ? 200 : 503);
    return { status: ready ? 'ready' : gw.draining ? 'draining' : 'not_ready', models };
  });

  app.get('/metrics', async (_req, reply) => {
    gw.afterAnswer.drain();
    reply.header('content-type', gw.registry.contentType);
    return gw.registry.metrics();
  });

  app.get('/v1/models', async () => ({
    object: 'list',
    data: [...gw.fleet.keys()].map((id) => ({ id, object: 'model', created: STARTED, owned_by: 'ctxgate' })),
  }));

  app.get('/v1/gateway/workers', async (req) => {
    requireAdmin(req.principal as Principal);
    return {
      models: [...gw.fleet.values()].map((r) => ({
        name: r.config.name,
        policy: r.policy.name,
        // Index size, evictions, branch counts, predicted vs reported cached tokens (ctxgate).
        policy_stats: r.policy.stats?.(),
        workers: r.workers.map((w) => w.snapshot()),
      })),
    };
  });

  app.get('/v1/gateway/requests/:id', async (req: FastifyRequest<{ Params: { id: string } }>) => {
    const p = req.principal as Principal;
    gw.afterAnswer.drain();
    const rec = gw.records.get(req.params.id, p.tenant, p.admin);
    if (!rec)
      throw new GatewayError(
        'not_found',
        `no request record '${req.params.id}' (records are kept for the last requests only)`,
      );
    return rec;
  });
}
