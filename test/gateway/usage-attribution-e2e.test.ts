// End to end through the assembled gateway (reference workers, ctxgate layout and routing, SQLite
// ledger, the openai SDK as client): an agent whose system prompt carries a clock gets its savings
// credited to the layout (the original would have broken the cache at message 0) and to routing
// (three workers: a uniform pick would hold a third of it); engine timing from x-sim-timing is
// recorded; a worker 400 (context too long) and all-503 answers are recorded unbilled.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAssembledGateway } from '../../gateway/assemble.ts';
import { parseConfig } from '../../gateway/config/load.ts';
import { SqliteLedger } from '../../gateway/accounting/stores/sqlite.ts';
import type { UsageRecord } from '../../gateway/accounting/types/usage.ts';
import { startSimWorker, type SimWorker } from '../../loadtest/sim-worker/index.ts';
import { until } from '../helpers/until.ts';

let workers: SimWorker[] = [];
let gw: Awaited<ReturnType<typeof startAssembledGateway>>;
let dir: string;
let ledgerPath: string;
const MODEL = 'qwen3-32b';

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ctxgate-attr-'));
  ledgerPath = join(dir, 'usage.sqlite');
  workers = await Promise.all(
    [0, 1, 2].map((i) =>
      startSimWorker({ port: 0, model: MODEL, tokenizer: 'qwen3', kvTokens: 200_000, timeScale: 0, seed: i }),
    ),
  );
  const config = parseConfig(
    {
      listen: { host: '127.0.0.1', port: 0 },
      auth: { mode: 'none' },
      health: { interval_ms: 0 },
      ledger: { path: ledgerPath, flush_ms: 20 },
      upstream: { attempts: 3 },
      models: [
        {
          name: MODEL,
          tokenizer: 'qwen3',
          layout: 'ctxgate',
          policy: 'ctxgate',
          workers: workers.map((w, i) => ({ url: w.url, id: `w${i}`, kv_tokens: 200_000 })),
        },
      ],
    },
    'attr',
  );
  gw = await startAssembledGateway(config, { logger: false });
});

afterAll(async () => {
  await gw?.close();
  await Promise.all(workers.map((w) => w.close()));
  rmSync(dir, { recursive: true, force: true });
});

async function rows(): Promise<UsageRecord[]> {
  const l = new SqliteLedger({ path: ledgerPath, retentionDays: 30, batchSize: 64, flushMs: 1000, readonly: true });
  const out: UsageRecord[] = [];
  for await (const r of l.query({})) out.push(r);
  await l.close();
  return out;
}

/** The ledger's rows once it holds `n` (the records are written after the answers). */
async function settle(n: number): Promise<UsageRecord[]> {
  let r: UsageRecord[] = [];
  await until(async () => (r = await rows()).length >= n);
  return r;
}

describe('savings by cause, timing and failures through the gateway', () => {
  it('credits layout and routing, records engine timing, and does not bill failures', async () => {
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'none', maxRetries: 0, timeout: 20_000 });
    const doc = 'def add(a, b):\n    return a + b\n'.repeat(120);
    const msgs: { role: 'system' | 'user' | 'assistant'; content: string }[] = [];
    for (let call = 0; call < 5; call++) {
      const system = {
        role: 'system' as const,
        content: `Current time: 2026-11-30T10:${String(10 + call).padStart(2, '0')}:00Z\nYou are a coding agent.\n${doc}`,
      };
      msgs.push({ role: 'user', content: `step ${call}: look at the code again and explain line ${call}` });
      const r = await client.chat.completions.create(
        { model: MODEL, messages: [system, ...msgs], max_tokens: 8 },
        { headers: { 'x-session-id': 'clocked' } },
      );
      msgs.push({ role: 'assistant', content: r.choices[0].message.content ?? '' });
    }
    // Context too long: the worker answers 400; the gateway must not bill its predicted usage.
    await expect(
      client.chat.completions.create(
        { model: MODEL, messages: [{ role: 'user', content: 'hi' }], max_tokens: 500_000 },
        { headers: { 'x-session-id': 'too-long' } },
      ),
    ).rejects.toMatchObject({ status: 400 });
    for (const w of workers) w.setFault({ failRate: 1, failStatus: 503 });
    await expect(
      client.chat.completions.create(
        { model: MODEL, messages: [{ role: 'user', content: 'again' }], max_tokens: 4 },
        { headers: { 'x-session-id': 'down' } },
      ),
    ).rejects.toMatchObject({
      status: 503,
    });
    for (const w of workers) w.setFault({ failRate: 0 });

    const all = await settle(7);
    const ok = all.filter((r) => r.sessionId === 'clocked');
    expect(ok).toHaveLength(5);
    // Call 2 shows the clock changing (volatility is learned from it); from call 3 on it is held out.
    const later = ok.slice(2);
    for (const r of later) {
      expect(r.cachedTokens).toBeGreaterThan(1000);
      expect(r.savingsLayoutNusd + r.savingsRoutingNusd + r.savingsEngineNusd).toBe(r.savingsNusd);
      // The clock in the original system message breaks the original layout at message 0.
      expect(r.savingsLayoutNusd).toBeGreaterThan(0.9 * r.savingsNusd);
      expect(r.cfOriginalNusd).toBe(r.costNusd + r.savingsLayoutNusd);
      expect(r.cfOriginalNusd!).toBeGreaterThan(r.costNusd);
      expect(r.timingSource).toBe('reported');
      expect(r.prefillMs).toBeGreaterThan(0);
      expect(r.decodeMs).not.toBeNull();
    }
    // The session's first call: nothing cached, nothing credited.
    expect(ok[0].savingsLayoutNusd).toBe(0);

    const tooLong = all.find((r) => r.sessionId === 'too-long')!;
    expect(tooLong.status).toBe(400);
    expect(tooLong).toMatchObject({ billing: 'unbilled_failure', costNusd: 0, promptTokens: 0 });
    const down = all.find((r) => r.status === 503)!;
    expect(down).toMatchObject({ billing: 'unbilled_failure', costNusd: 0 });
  });

  it('routing is credited when the session lands where its prefix is, not on a uniform pick', async () => {
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'none', maxRetries: 0, timeout: 20_000 });
    const base = [{ role: 'system' as const, content: 'You are terse.\n' + 'lorem ipsum dolor sit amet '.repeat(300) }];
    const hist: { role: 'user' | 'assistant'; content: string }[] = [];
    for (let call = 0; call < 3; call++) {
      hist.push({ role: 'user', content: `q${call}` });
      const r = await client.chat.completions.create(
        { model: MODEL, messages: [...base, ...hist], max_tokens: 4 },
        { headers: { 'x-session-id': 'routed' } },
      );
      hist.push({ role: 'assistant', content: r.choices[0].message.content ?? '' });
    }
    const r = (await settle(10)).filter((x) => x.sessionId === 'routed');
    expect(r).toHaveLength(3);
    const last = r[2];
    expect(last.cachedTokens).toBeGreaterThan(1000);
    // Nothing volatile: the original layout loses nothing, so the layout gets no credit.
    expect(last.savingsLayoutNusd).toBe(0);
    // One of three workers holds the conversation: routing earns roughly two thirds of the saving.
    expect(last.savingsRoutingNusd).toBeGreaterThan(0.5 * last.savingsNusd);
    expect(last.savingsEngineNusd).toBeGreaterThan(0);
  });
});
