// GET /v1/gateway/sessions/:id/breaks — the last cache-break diagnostics of one session (a ring of
// BREAK_RING_SIZE per session, newest last), tenant-scoped: the caller's tenant namespaces the
// store lookup, so another tenant's session id simply does not exist. Registered by the gateway.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { errorBody } from '../errors.ts';
import { readBreaks } from '../diagnostics/break-ring.ts';
import type { SessionStore } from '../session/store.ts';

export interface BreakRouteDeps {
  store: SessionStore;
  /** Tenant of the authenticated caller; undefined answers 401. */
  tenantOf(req: FastifyRequest): string | undefined;
}

export async function registerBreakRoutes(app: FastifyInstance, deps: BreakRouteDeps): Promise<void> {
  app.get<{ Params: { id: string }; Querystring: { limit?: string } }>(
    '/v1/gateway/sessions/:id/breaks',
    async (req, reply) => {
      const tenant = deps.tenantOf(req);
      if (!tenant) return reply.code(401).send(errorBody('unauthenticated', 'missing or invalid API key'));
      const state = await deps.store.get(tenant, req.params.id);
      if (!state)
        return reply.code(404).send(errorBody('not_found', `no session '${req.params.id}' for this tenant`, 'id'));
      const all = readBreaks(state);
      const limit = Math.max(1, Math.min(all.length || 1, Number(req.query.limit ?? all.length) || all.length));
      return {
        object: 'list',
        session: state.sessionId,
        model: state.model,
        calls: state.calls,
        data: all.slice(-limit),
      };
    },
  );
}
