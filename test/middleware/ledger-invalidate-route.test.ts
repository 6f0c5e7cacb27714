import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Fastify, { type FastifyInstance } from 'fastify';
import { registerInvalidateRoutes } from '../../middleware/routes/invalidate.ts';
import { MemorySessionStore } from '../../middleware/session/memory-store.ts';
import { SESSION_SCHEMA_VERSION } from '../../middleware/session/store.ts';
import { applyLedger } from '../../middleware/ledger/ledger.ts';
import { LEDGER_SLOT } from '../../middleware/ledger/types.ts';
import { readSlot } from '../../middleware/session/stage-state.ts';
import { buildSession, requestsOf } from './helpers/session-gen.ts';

describe('POST /v1/gateway/sessions/:id/invalidate', () => {
  let app: FastifyInstance;
  let base: string;
  const store = new MemorySessionStore();
  beforeAll(async () => {
    app = Fastify();
    await registerInvalidateRoutes(app, {
      store,
      authTenant: (req) =>
        ({ 'key-a': 'tenant-a', 'key-b': 'tenant-b' })[String(req.headers.authorization ?? '').replace('Bearer ', '')],
    });
    base = await app.listen({ port: 0, host: '127.0.0.1' });
  });
  afterAll(async () => app.close());

  it('queues an external invalidation that becomes a tombstone on the next call; tenant-scoped', async () => {
    const msgs = buildSession('t', [
      { cmd: 'cat src/cfg.yaml', out: 'a: 1' },
      { cmd: 'echo x', out: 'x' },
    ]);
    const reqs = requestsOf(msgs);
    const r1 = applyLedger(reqs[1], undefined);
    await store.put({
      schema: SESSION_SCHEMA_VERSION,
      tenant: 'tenant-a',
      sessionId: 's1',
      model: 'm',
      rootHash: 'h',
      calls: 2,
      updatedAt: 1,
      stages: { [LEDGER_SLOT.key]: { v: LEDGER_SLOT.version, s: r1.state } },
    });
    const post = (key: string, body: unknown) =>
      fetch(`${base}/v1/gateway/sessions/s1/invalidate`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    expect((await post('key-b', { uri: 'src/cfg.yaml' })).status).toBe(404);
    expect((await post('key-a', { uri: 42 })).status).toBe(400);
    expect((await post('nope', { uri: 'x' })).status).toBe(401);
    const ok = await post('key-a', { uri: 'src/cfg.yaml', reason: 'file watcher' });
    expect(ok.status).toBe(202);
    expect(await ok.json()).toMatchObject({ uri: 'file://src/cfg.yaml', pending: 1 });
    const st = await store.get('tenant-a', 's1');
    const r2 = applyLedger(reqs[2], readSlot(st!, LEDGER_SLOT), { eviction: false });
    expect(r2.state.tombstones.map((t) => t.text)).toEqual([
      '[ctxgate] the read of src/cfg.yaml at call 1 is stale: changed outside the session (file watcher) — re-read before relying on it',
    ]);
  });
});
