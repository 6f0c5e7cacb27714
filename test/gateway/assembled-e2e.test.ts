// The assembled product end to end: reference workers, the full pipeline (layout + ledger +
// compaction), usage ledger and session routes, two tenants, the official openai SDK as client.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAssembledGateway } from '../../gateway/assemble.ts';
import { parseConfig } from '../../gateway/config/load.ts';
import { SqliteLedger } from '../../gateway/accounting/stores/sqlite.ts';
import { startSimWorker, type SimWorker } from '../../loadtest/sim-worker/index.ts';
import type { ChatMessage } from '../../middleware/types.ts';
import { keyHash } from '../helpers/keys.ts';

const KEY_A = 'sk-tenant-a-0123456789';
const KEY_B = 'sk-tenant-b-0123456789';
const KEY_ADMIN = 'sk-admin-0123456789';

let workers: SimWorker[] = [];
let gw: Awaited<ReturnType<typeof startAssembledGateway>>;
let dir: string;

const client = (key: string) => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: key, maxRetries: 0, timeout: 20_000 });
const tools = [
  {
    type: 'function' as const,
    function: {
      name: 'bash',
      description: 'run a shell command',
      parameters: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] },
    },
  },
];

function history(call: number): ChatMessage[] {
  const msgs: ChatMessage[] = [
    {
      role: 'system',
      content: `Current date: 2026-11-30T03:${String(10 + call).padStart(2, '0')}:00Z\nYou are a careful coding agent. Use the bash tool.`,
    },
    { role: 'user', content: 'Fix the failing test in src/app.py. Do not modify tests.' },
  ];
  for (let i = 0; i < call; i++) {
    const id = `call_${i}`;
    const cmd =
      i === 0
        ? 'cat src/app.py'
        : i === 1
          ? "sed -i 's/a+b/a-b/' src/app.py"
          : `pytest -q tests/test_app.py -k case${i}`;
    msgs.push({
      role: 'assistant',
      content: '',
      tool_calls: [{ id, type: 'function', function: { name: 'bash', arguments: JSON.stringify({ command: cmd }) } }],
    });
    msgs.push({
      role: 'tool',
      tool_call_id: id,
      content: i === 0 ? 'def add(a, b):\n    return a+b\n'.repeat(20) : `ok ${i}\n`,
    });
  }
  return msgs;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ctxgate-e2e-'));
  workers = await Promise.all(
    [0, 1].map((i) =>
      startSimWorker({ port: 0, model: 'qwen3-32b', tokenizer: 'qwen3', kvTokens: 200_000, timeScale: 0, seed: i }),
    ),
  );
  const config = parseConfig(
    {
      listen: { host: '127.0.0.1', port: 0 },
      auth: {
        mode: 'keys',
        keys: [
          { key: keyHash(KEY_A), tenant: 'team-a' },
          { key: keyHash(KEY_B), tenant: 'team-b' },
          { key: keyHash(KEY_ADMIN), tenant: 'ops', admin: true },
        ],
      },
      health: { interval_ms: 0 },
      ledger: { path: join(dir, 'usage.sqlite'), flush_ms: 50 },
      models: [
        {
          name: 'qwen3-32b',
          tokenizer: 'qwen3',
          layout: 'ctxgate',
          policy: 'ctxgate',
          budget_tokens: 60_000,
          workers: workers.map((w, i) => ({ url: w.url, id: `w${i}`, kv_tokens: 200_000 })),
        },
      ],
    },
    'e2e',
  );
  gw = await startAssembledGateway(config, { logger: false });
});

afterAll(async () => {
  await gw?.close();
  await Promise.all(workers.map((w) => w.close()));
  rmSync(dir, { recursive: true, force: true });
});

describe('assembled gateway', () => {
  it('keeps a session with a volatile clock cached, tombstones an invalidated read, and scopes every route by tenant', async () => {
    const a = client(KEY_A);
    const prefixes: string[] = [];
    const cached: number[] = [];
    const ids: string[] = [];
    for (let call = 1; call <= 3; call++) {
      const { data, response } = await a.chat.completions
        .create(
          { model: 'qwen3-32b', messages: history(call) as never, tools, max_tokens: 16 },
          { headers: { 'x-session-id': 'sess-1' } },
        )
        .withResponse();
      prefixes.push(response.headers.get('x-ctxgate-prefix') ?? '');
      cached.push(data.usage?.prompt_tokens_details?.cached_tokens ?? 0);
      ids.push(response.headers.get('x-request-id') ?? '');
      expect(response.headers.get('x-ctxgate-session')).toBe('sess-1');
      // Cost headers agree with the worker's usage: cached tokens counted once, price positive.
      expect(Number(response.headers.get('x-ctxgate-cached-tokens'))).toBe(
        data.usage?.prompt_tokens_details?.cached_tokens ?? 0,
      );
      expect(Number(response.headers.get('x-ctxgate-cost-usd'))).toBeGreaterThan(0);
    }
    // The clock changed every call, yet after the first call the prefix did not break.
    expect(prefixes[2]).toMatch(/break=none/);
    expect(cached[2]).toBeGreaterThan(100);

    // The sed -i seen at call 2 wrote src/app.py after the cat: that call's receipts record a
    // tombstone (or a cheaper eviction); another tenant cannot read the record.
    const rec = await fetch(`${gw.url}/v1/gateway/requests/${ids[1]}`, {
      headers: { authorization: `Bearer ${KEY_A}` },
    });
    expect(rec.status).toBe(200);
    const body = (await rec.json()) as { receipts: { stage: string; action: string; target?: string }[] };
    const tombstones = body.receipts.filter((r) => r.stage === 'ledger' && r.action === 'tombstone').length;
    const metrics = await (await fetch(`${gw.url}/metrics`)).text();
    const m = /^ctxgate_tombstones_total\{model="qwen3-32b"\} (\d+)/m.exec(metrics);
    expect(Number(m?.[1] ?? 0)).toBe(tombstones);
    const other = await fetch(`${gw.url}/v1/gateway/requests/${ids[1]}`, {
      headers: { authorization: `Bearer ${KEY_B}` },
    });
    expect(other.status).toBe(404);
    expect(
      body.receipts.some(
        (r) =>
          r.stage === 'ledger' &&
          (r.action === 'tombstone' || r.action === 'evict') &&
          (r.target ?? '').includes('src/app.py'),
      ),
    ).toBe(true);

    // Breaks: the owner sees its session; another tenant guessing the id does not.
    const mine = await fetch(`${gw.url}/v1/gateway/sessions/sess-1/breaks`, {
      headers: { authorization: `Bearer ${KEY_A}` },
    });
    expect(mine.status).toBe(200);
    expect(((await mine.json()) as { data: unknown[] }).data.length).toBe(3);
    const theirs = await fetch(`${gw.url}/v1/gateway/sessions/sess-1/breaks`, {
      headers: { authorization: `Bearer ${KEY_B}` },
    });
    expect(theirs.status).toBe(404);
    const inval = await fetch(`${gw.url}/v1/gateway/sessions/sess-1/invalidate`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY_B}`, 'content-type': 'application/json' },
      body: JSON.stringify({ uri: 'src/app.py' }),
    });
    expect(inval.status).toBe(404);

    // Tenant B using the same session id starts its own session.
    const { response: rb } = await client(KEY_B)
      .chat.completions.create(
        { model: 'qwen3-32b', messages: history(1) as never, tools, max_tokens: 8 },
        { headers: { 'x-session-id': 'sess-1' } },
      )
      .withResponse();
    expect(rb.headers.get('x-ctxgate-prefix')).toMatch(/break=new_session/);

    // Once everything answered, no worker holds in-flight requests or queued prefill tokens, and
    // the ctxgate policy has learned blocks from the workers' feedback.
    const adm = await fetch(`${gw.url}/v1/gateway/workers`, { headers: { authorization: `Bearer ${KEY_ADMIN}` } });
    const fleet = (await adm.json()) as {
      models: { policy_stats?: { indexSize?: number }; workers: { inFlight: number; queuedPrefillTokens: number }[] }[];
    };
    for (const w of fleet.models[0].workers) expect([w.inFlight, w.queuedPrefillTokens]).toEqual([0, 0]);
    expect(JSON.stringify(fleet.models[0].policy_stats)).toMatch(/\d/);
  });

  it('writes every request to the usage ledger and reports per tenant', async () => {
    await gw.assembled.reporting!.ledger.flush();
    const admin = await fetch(`${gw.url}/v1/gateway/report?group_by=tenant&format=json`, {
      headers: { authorization: `Bearer ${KEY_ADMIN}` },
    });
    expect(admin.status).toBe(200);
    const all = (await admin.json()) as {
      totals: { requests: number; cached_tokens: number };
      groups: { key: string; requests: number }[];
    };
    expect(all.totals.requests).toBe(4);
    expect(all.totals.cached_tokens).toBeGreaterThan(0);
    expect(all.groups.map((g) => g.key).sort()).toEqual(['team-a', 'team-b']);
    const b = await fetch(`${gw.url}/v1/gateway/report?group_by=tenant&format=json`, {
      headers: { authorization: `Bearer ${KEY_B}` },
    });
    const own = (await b.json()) as { totals: { requests: number }; groups: { key: string }[] };
    expect(own.totals.requests).toBe(1);
    expect(own.groups.map((g) => g.key)).toEqual(['team-b']);

    // Durable: the SQLite file holds the rows after the gateway's ledger is closed.
    await gw.close();
    const reopened = new SqliteLedger({
      path: join(dir, 'usage.sqlite'),
      retentionDays: 90,
      batchSize: 16,
      flushMs: 50,
    });
    let rows = 0;
    for await (const _r of reopened.query({})) rows++;
    await reopened.close();
    expect(rows).toBe(4);
  });
});
