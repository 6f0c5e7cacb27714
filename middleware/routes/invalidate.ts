// POST /v1/gateway/sessions/:id/invalidate {uri, reason?} — marks a source stale from outside
// the session (file watcher, another process, `git pull`). The ledger applies it on the
// session's next call: every live observation of that URI (or under that dir) gets one
// tombstone at the leaf. Tenant-scoped: the caller's tenant namespaces the store lookup.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { errorBody } from '../errors.ts';
import { invalidate } from '../ledger/ledger.ts';
import { DEFAULT_LEDGER_WRITE_VERSION, type LedgerWriteVersion, readLedger, writeLedger } from '../ledger/slot.ts';
import { fileUri } from '../ledger/uri.ts';
import { sessionLockKey, sessionLockOf } from '../session/session-lock.ts';
import type { SessionState, SessionStore } from '../session/store.ts';

export const MAX_URI_CHARS = 2048;

export interface InvalidateRouteDeps {
  store: SessionStore;
  /** Tenant of the authenticated caller; undefined answers 401. */
  authTenant(req: FastifyRequest): string | undefined;
  /** Shape the ledger's part is stored with, as the pipeline's (session_state.ledger_write_version). */
  ledgerWriteVersion?: LedgerWriteVersion;
}

/** `file:///x`, `dir://src`, `proc://ps`… pass as given; a bare path becomes a file URI. */
export function normaliseUri(uri: string): string {
  return /^[a-z][a-z0-9+.-]*:\/\//.test(uri) ? uri : fileUri(uri);
}

export async function registerInvalidateRoutes(app: FastifyInstance, deps: InvalidateRouteDeps): Promise<void> {
  app.post<{ Params: { id: string }; Body: { uri?: unknown; reason?: unknown } }>(
    '/v1/gateway/sessions/:id/invalidate',
    async (req, reply) => {
      const tenant = deps.authTenant(req);
      if (!tenant) return reply.code(401).send(errorBody('unauthenticated', 'missing or invalid API key'));
      const body = (req.body ?? {}) as { uri?: unknown; reason?: unknown };
      if (typeof body.uri !== 'string' || body.uri.length === 0 || body.uri.length > MAX_URI_CHARS) {
        return reply
          .code(400)
          .send(
            errorBody(
              'invalid_request',
              `uri must be a non-empty string of at most ${MAX_URI_CHARS} characters`,
              'uri',
            ),
          );
      }
      // Under the session's lock, as the pipeline's calls are: the write never drops a call's learning.
      const release = await sessionLockOf(deps.store).acquire(sessionLockKey(tenant, req.params.id));
      let state: SessionState | undefined;
      let pending: number;
      const uri = normaliseUri(body.uri);
      try {
        state = await deps.store.get(tenant, req.params.id);
        if (!state)
          return reply.code(404).send(errorBody('not_found', `no session '${req.params.id}' for this tenant`, 'id'));
        const reason = typeof body.reason === 'string' && body.reason ? body.reason : 'invalidated via API';
        const observations = invalidate(readLedger(state), uri, reason);
        writeLedger(state, observations, deps.ledgerWriteVersion ?? DEFAULT_LEDGER_WRITE_VERSION);
        state.updatedAt = Date.now();
        await deps.store.put(state);
        pending = observations.pending.length;
      } finally {
        release();
      }
      return reply.code(202).send({ object: 'session.invalidation', session: state.sessionId, uri, pending });
    },
  );
}
