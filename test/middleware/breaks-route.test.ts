import Fastify from 'fastify';
import { afterAll, describe, expect, it } from 'vitest';
import { createPipeline } from '../../middleware/pipeline.ts';
import { registerBreakRoutes } from '../../middleware/routes/breaks.ts';
import { MemorySessionStore } from '../../middleware/session/memory-store.ts';

const store = new MemorySessionStore();
const app = Fastify();
afterAll(() => app.close());

describe('GET /v1/gateway/sessions/:id/breaks', () => {
  it('lists the session diagnostics for its tenant only', async () => {
    await registerBreakRoutes(app, {
      store,
      tenantOf: (req) => (req.headers['x-tenant'] as string | undefined) ?? undefined,
    });
    const address = await app.listen({ port: 0, host: '127.0.0.1' });
    const p = createPipeline({ model: 'm', tokenizer: 'cl100k_base', store });
    const sys = (i: number) => ({ role: 'system', content: `request id ${i}f3a9c1 — you are helpful` });
    for (let i = 0; i < 3; i++) {
      await p.process(
        { model: 'm', messages: [sys(i), { role: 'user', content: 'hi '.repeat(40 + i) }] },
        { tenant: 'A', requestId: `r${i}`, headers: { 'x-session-id': 's1' }, model: 'm' },
      );
    }
    const ok = await fetch(`${address}/v1/gateway/sessions/s1/breaks`, { headers: { 'x-tenant': 'A' } });
    expect(ok.status).toBe(200);
    const body = (await ok.json()) as { data: { break_cause: string; call: number }[] };
    expect(body.data.map((d) => d.call)).toEqual([1, 2, 3]);
    expect(body.data[0].break_cause).toBe('new_session');
    const other = await fetch(`${address}/v1/gateway/sessions/s1/breaks`, { headers: { 'x-tenant': 'B' } });
    expect(other.status).toBe(404);
    expect(((await other.json()) as { error: { code: string } }).error.code).toBe('not_found');
    const anon = await fetch(`${address}/v1/gateway/sessions/s1/breaks`);
    expect(anon.status).toBe(401);
  });
});
