// End to end: the official openai SDK -> gateway -> fake upstream; the usage recorder prices each
// request into a SQLite ledger; GET /v1/gateway/report serves it, scoped to the caller's tenant.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Principal } from '../../gateway/auth.ts';
import { parseConfig } from '../../gateway/config/load.ts';
import { SqliteLedger } from '../../gateway/accounting/stores/sqlite.ts';
import { reportRoutes } from '../../gateway/accounting/routes/report.ts';
import { buildGateway, type BuiltGateway } from '../../gateway/server.ts';
import { createPricingLookup } from '../../gateway/accounting/record/pricing.ts';
import { createUsageRecorder, type UsageRecorder } from '../../gateway/accounting/record/recorder.ts';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.ts';
import { until } from '../helpers/gateway.ts';
import { keyHash } from '../helpers/keys.ts';

const KEYS = { admin: 'sk-admin-0123456789', a: 'sk-team-a-0123456789', b: 'sk-team-b-0123456789' };
const dir = mkdtempSync(join(tmpdir(), 'ctxgate-report-route-'));
let up: FakeUpstream;
let gw: BuiltGateway;
let url: string;
let ledger: SqliteLedger;
let recorder: UsageRecorder;
const ids: string[] = [];

beforeAll(async () => {
  up = await startFakeUpstream({ name: 'w1', knobs: { cachedTokens: 3 } });
  const config = parseConfig({
    listen: { host: '127.0.0.1', port: 0 },
    auth: {
      mode: 'keys',
      keys: [
        { key: keyHash(KEYS.admin), tenant: 'ops', admin: true, id: 'admin' },
        { key: keyHash(KEYS.a), tenant: 'team-a', id: 'ka' },
        { key: keyHash(KEYS.b), tenant: 'team-b', id: 'kb' },
      ],
    },
    health: { interval_ms: 0 },
    models: [
      {
        name: 'm1',
        layout: 'passthrough',
        workers: [{ url: up.url, id: 'w1' }],
        pricing: { input_per_mtok: 2, cached_input_per_mtok: 0.5, output_per_mtok: 8 },
      },
    ],
  });
  ledger = new SqliteLedger({ path: join(dir, 'usage.sqlite'), retentionDays: 90, batchSize: 16, flushMs: 20 });
  recorder = createUsageRecorder({ ledger, pricingFor: createPricingLookup(config) });
  gw = buildGateway(config, { logger: false, onUsage: recorder.onUsage });
  recorder.attachMetrics(gw.ctx.metrics);
  await gw.app.register(reportRoutes, { ledger, authorize: (req) => req.principal as Principal });
  await gw.app.listen({ host: '127.0.0.1', port: 0 });
  const addr = gw.app.server.address();
  url = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;

  const client = (key: string) => new OpenAI({ baseURL: `${url}/v1`, apiKey: key, maxRetries: 0, timeout: 10_000 });
  const msgs = [{ role: 'user' as const, content: 'hello there, how are you today?' }];
  for (const key of [KEYS.a, KEYS.a]) {
    const r = await client(key).chat.completions.create({ model: 'm1', messages: msgs }).withResponse();
    ids.push(r.response.headers.get('x-request-id')!);
  }
  const stream = await client(KEYS.b).chat.completions.create({
    model: 'm1',
    messages: msgs,
    stream: true,
    stream_options: { include_usage: true },
  });
  for await (const _ of stream) void _;
  await until(() => ids.every((id) => recorder.lastRecord(id)) && ledger.stats().appended === 3);
  await ledger.flush();
});

afterAll(async () => {
  await gw?.close();
  await recorder?.close();
  await ledger?.close();
  await up?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function get(key: string | null, qs: string): Promise<Response> {
  return fetch(`${url}/v1/gateway/report?${qs}`, { headers: key ? { authorization: `Bearer ${key}` } : {} });
}

describe('GET /v1/gateway/report', () => {
  it('a tenant key sees only its own rows, whatever it asks for', async () => {
    for (const qs of ['group_by=tenant', 'group_by=tenant&tenant=team-b']) {
      const res = await get(KEYS.a, qs);
      expect(res.status).toBe(200);
      const j = (await res.json()) as { totals: { requests: number }; groups: { key: string; requests: number }[] };
      expect(j.groups.map((g) => [g.key, g.requests])).toEqual([['team-a', 2]]);
      expect(j.totals.requests).toBe(2);
    }
  });

  it('an admin sees every tenant and the totals reconcile with the per-request records', async () => {
    const res = await get(KEYS.admin, 'group_by=tenant&format=json');
    const j = (await res.json()) as {
      totals: { requests: number; cost_nusd: number; cached_tokens: number; prompt_tokens: number };
      groups: { key: string }[];
    };
    expect(j.groups.map((g) => g.key).sort()).toEqual(['team-a', 'team-b']);
    expect(j.totals.requests).toBe(3);
    const rows = [];
    for await (const r of ledger.query()) rows.push(r);
    expect(rows.every((r) => r.usageSource === 'reported' && r.cachedTokens === 3 && r.pricingKind === 'token')).toBe(
      true,
    );
    expect(j.totals.cost_nusd).toBe(rows.reduce((a, r) => a + r.costNusd, 0));
    expect(j.totals.cached_tokens).toBe(9);
    const first = recorder.lastRecord(ids[0])!;
    // $2/M input, $0.50/M cached, $8/M output: 2000, 500, 8000 nUSD per token.
    expect(first.costNusd).toBe((first.promptTokens - 3) * 2000 + 3 * 500 + first.outputTokens * 8000);
    const narrowed = (await (await get(KEYS.admin, 'group_by=model&tenant=team-b')).json()) as {
      totals: { requests: number };
    };
    expect(narrowed.totals.requests).toBe(1);
  });

  it('serves csv, md and html with their content types', async () => {
    const csv = await get(KEYS.admin, 'format=csv&group_by=worker');
    expect(csv.headers.get('content-type')).toMatch(/^text\/csv/);
    expect((await csv.text()).split('\n')[1]).toMatch(/^w1,3,/);
    const html = await get(KEYS.admin, 'format=html');
    expect(html.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await html.text()).toContain('<svg');
    expect((await get(KEYS.b, 'format=md')).headers.get('content-type')).toMatch(/^text\/markdown/);
  });

  it('bad parameters and missing keys get OpenAI-shaped errors', async () => {
    const bad = await get(KEYS.admin, 'group_by=planet');
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({
      error: { type: 'invalid_request_error', code: 'invalid_request', param: 'group_by' },
    });
    const badTime = await get(KEYS.admin, 'since=yesterday-ish');
    expect(badTime.status).toBe(400);
    const anon = await get(null, 'group_by=tenant');
    expect(anon.status).toBe(401);
    expect(await anon.json()).toMatchObject({ error: { code: 'unauthenticated' } });
  });

  it('the recorder fed the cost and savings counters', async () => {
    const text = await gw.ctx.registry.metrics();
    expect(text).toMatch(/ctxgate_cost_usd_total\{model="m1",tenant="team-a",kind="uncached_input"\} [0-9.e-]+/);
    expect(text).toMatch(/ctxgate_cost_usd_total\{model="m1",tenant="team-b",kind="cached_input"\} [0-9.e-]+/);
    expect(text).toMatch(/ctxgate_savings_usd_total\{model="m1",tenant="team-a"\} [0-9.e-]+/);
  });
});
