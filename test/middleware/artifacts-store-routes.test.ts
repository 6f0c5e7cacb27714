import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Fastify, { type FastifyInstance } from 'fastify';
import { mkdtempSync, writeFileSync, readdirSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FsArtifactStore, MemoryArtifactStore } from '../../middleware/artifacts/store.ts';
import { registerArtifactRoutes } from '../../middleware/routes/artifacts.ts';
import { sha256Hex } from '../../middleware/canonical-json.ts';

describe('artifact stores', () => {
  it('memory: content-addressed, tenant-scoped, redacted, bounded', async () => {
    const s = new MemoryArtifactStore({ maxBytes: 1000 });
    const h = await s.put('a', 'output with sk-abcdefghijklmnopqrstuvwxyz012345 inside');
    const text = await s.get('a', h);
    expect(text).toBe('output with [REDACTED:openai] inside');
    expect(sha256Hex(text!)).toBe(h);
    expect(await s.get('b', h)).toBeUndefined();
    for (let i = 0; i < 20; i++) await s.put('a', `${i}`.repeat(100));
    expect(await s.get('a', h)).toBeUndefined(); // evicted by the byte bound
  });
  it('filesystem: survives a new instance, rejects tampered files', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ctxgate-fsart-'));
    const h = await new FsArtifactStore(dir).put('t', 'hello');
    const s2 = new FsArtifactStore(dir);
    expect(await s2.get('t', h)).toBe('hello');
    expect(await s2.get('u', h)).toBeUndefined();
    expect(await s2.get('t', '../../etc/passwd')).toBeUndefined();
    const find = (d: string): string[] =>
      readdirSync(d).flatMap((f) => (statSync(join(d, f)).isDirectory() ? find(join(d, f)) : [join(d, f)]));
    writeFileSync(find(dir)[0], 'tampered');
    expect(await s2.get('t', h)).toBeUndefined();
  });
});

describe('GET /v1/gateway/artifacts/:hash', () => {
  let app: FastifyInstance;
  let base: string;
  const store = new MemoryArtifactStore();
  beforeAll(async () => {
    app = Fastify();
    await registerArtifactRoutes(app, {
      artifacts: store,
      authTenant: (req) =>
        ({ 'key-a': 'tenant-a', 'key-b': 'tenant-b' })[String(req.headers.authorization ?? '').replace('Bearer ', '')],
    });
    base = await app.listen({ port: 0, host: '127.0.0.1' });
  });
  afterAll(async () => app.close());

  it('serves the owner, hides it from other tenants, validates input', async () => {
    const h = await store.put('tenant-a', 'full pytest output');
    const get = (key: string, hash: string) =>
      fetch(`${base}/v1/gateway/artifacts/${hash}`, { headers: { authorization: `Bearer ${key}` } });
    const ok = await get('key-a', h);
    expect(ok.status).toBe(200);
    expect(await ok.text()).toBe('full pytest output');
    const other = await get('key-b', h);
    expect(other.status).toBe(404);
    expect(((await other.json()) as { error: { code: string } }).error.code).toBe('not_found');
    expect((await get('nope', h)).status).toBe(401);
    expect((await get('key-a', 'xyz')).status).toBe(400);
  });
});
