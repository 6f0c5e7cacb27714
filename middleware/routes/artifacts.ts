// GET /v1/gateway/artifacts/:hash — the full (redacted) output a compaction evicted, by its
// sha256. Tenant-scoped: the store is namespaced by the caller's tenant, so another tenant's
// hash is simply not found. Served as text/plain with an immutable cache header.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { errorBody } from '../errors.ts';
import { isArtifactHash, type ArtifactStore } from '../artifacts/store.ts';

export interface ArtifactRouteDeps {
  artifacts: ArtifactStore;
  /** Tenant of the authenticated caller; undefined answers 401. */
  authTenant(req: FastifyRequest): string | undefined;
}

export async function registerArtifactRoutes(app: FastifyInstance, deps: ArtifactRouteDeps): Promise<void> {
  app.get<{ Params: { hash: string } }>('/v1/gateway/artifacts/:hash', async (req, reply) => {
    const tenant = deps.authTenant(req);
    if (!tenant) return reply.code(401).send(errorBody('unauthenticated', 'missing or invalid API key'));
    const hash = req.params.hash.toLowerCase();
    if (!isArtifactHash(hash))
      return reply.code(400).send(errorBody('invalid_request', 'hash must be 64 hex characters (sha256)', 'hash'));
    const text = await deps.artifacts.get(tenant, hash);
    if (text === undefined)
      return reply.code(404).send(errorBody('not_found', `no artifact ${hash} for this tenant`, 'hash'));
    return reply
      .header('content-type', 'text/plain; charset=utf-8')
      .header('cache-control', 'private, max-age=31536000, immutable')
      .header('x-content-sha256', hash)
      .send(text);
  });
}
