import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRig, until, type TestRig } from '../helpers/gateway.ts';
import { keyHash } from '../helpers/keys.ts';

const msg = [{ role: 'user' as const, content: 'hi' }];

describe('auth', () => {
  let rig: TestRig;
  beforeAll(async () => {
    rig = await startRig({
      env: { ...process.env, CTXGATE_TEST_ADMIN_KEY: 'sk-admin-from-env' },
      config: {
        auth: {
          mode: 'keys',
          keys: [
            { key: keyHash('sk-tenant-a'), tenant: 'acme', id: 'acme-ci' },
            { key: keyHash('sk-tenant-b'), tenant: 'globex' },
            { key: 'env:CTXGATE_TEST_ADMIN_KEY', tenant: 'ops', admin: true },
          ],
        },
      },
    });
  });
  afterAll(async () => rig.close());

  it('accepts a hashed key and attributes usage to its tenant and key id', async () => {
    const { response } = await rig
      .client('sk-tenant-a')
      .chat.completions.create({ model: 'm1', messages: msg })
      .withResponse();
    const id = response.headers.get('x-request-id')!;
    await until(() => rig.usage.some((u) => u.requestId === id));
    expect(rig.usage.find((u) => u.requestId === id)).toMatchObject({ tenant: 'acme', keyId: 'acme-ci', status: 200 });
  });

  it('accepts an env: key (hashed at load) and lets an admin read worker state', async () => {
    const r = await fetch(`${rig.gw.url}/v1/gateway/workers`, {
      headers: { authorization: 'Bearer sk-admin-from-env' },
    });
    expect(r.status).toBe(200);
    expect(JSON.stringify(rig.gw.ctx.config)).not.toContain('sk-admin-from-env');
  });

  it('401 for a wrong or missing key, before any upstream work', async () => {
    const before = rig.ups.reduce((n, u) => n + u.received, 0);
    const e = await rig
      .client('sk-wrong')
      .chat.completions.create({ model: 'm1', messages: msg })
      .catch((x) => x);
    expect(e).toBeInstanceOf(OpenAI.AuthenticationError);
    expect(e.code).toBe('unauthenticated');
    const r = await fetch(`${rig.gw.url}/v1/models`);
    expect(r.status).toBe(401);
    expect(rig.ups.reduce((n, u) => n + u.received, 0)).toBe(before);
  });

  it('403 admin_required on admin routes for a tenant key', async () => {
    const r = await fetch(`${rig.gw.url}/v1/gateway/workers`, { headers: { authorization: 'Bearer sk-tenant-a' } });
    expect(r.status).toBe(403);
    expect(((await r.json()) as { error: { code: string } }).error.code).toBe('admin_required');
  });

  it('probes are open; request records are tenant-scoped', async () => {
    expect((await fetch(`${rig.gw.url}/health`)).status).toBe(200);
    await rig.gw.checkHealth();
    expect((await fetch(`${rig.gw.url}/ready`)).status).toBe(200);
    const { response } = await rig
      .client('sk-tenant-a')
      .chat.completions.create({ model: 'm1', messages: msg })
      .withResponse();
    const id = response.headers.get('x-request-id')!;
    await until(() => rig.usage.some((u) => u.requestId === id));
    const get = (key: string) =>
      fetch(`${rig.gw.url}/v1/gateway/requests/${id}`, { headers: { authorization: `Bearer ${key}` } });
    expect((await get('sk-tenant-a')).status).toBe(200);
    expect((await get('sk-tenant-b')).status).toBe(404);
    expect((await get('sk-admin-from-env')).status).toBe(200);
  });
});
