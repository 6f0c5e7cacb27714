// createReporting wires everything through GatewayDeps: a real gateway records usage into the
// ledger its config names, serves the report, exports cost metrics, and flushes at shutdown.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../gateway/config/load.ts';
import { SqliteLedger } from '../../gateway/accounting/stores/sqlite.ts';
import { JOURNAL_SUFFIX } from '../../gateway/accounting/stores/journal.ts';
import { startGateway } from '../../gateway/server.ts';
import { PricingError } from '../../gateway/accounting/record/pricing.ts';
import { createReporting } from '../../gateway/accounting/routes/reporting.ts';
import { startFakeUpstream } from '../helpers/fake-upstream.ts';
import { until } from '../helpers/gateway.ts';

const dir = mkdtempSync(join(tmpdir(), 'ctxgate-reporting-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function pick<T, K extends keyof T>(o: T, keys: readonly K[]): Pick<T, K> {
  return Object.fromEntries(keys.map((k) => [k, o[k]])) as Pick<T, K>;
}

describe('createReporting', () => {
  it('records, reports and writes each record without waiting for flush_ms or shutdown', async () => {
    const up = await startFakeUpstream({ name: 'w1', knobs: { cachedTokens: 2 } });
    const path = join(dir, 'usage.sqlite');
    const config = parseConfig({
      listen: { host: '127.0.0.1', port: 0 },
      health: { interval_ms: 0 },
      ledger: { path, flush_ms: 60_000, batch_size: 1000 }, // the retry timer never fires in this test
      models: [{ name: 'm1', layout: 'passthrough', workers: [{ url: up.url, id: 'w1' }] }],
    });
    const reporting = createReporting(config);
    const gw = await startGateway(config, { logger: false, ...reporting.deps });
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'none', maxRetries: 0 });
    const r = await client.chat.completions
      .create({ model: 'm1', messages: [{ role: 'user', content: 'one two three four' }] })
      .withResponse();
    const id = r.response.headers.get('x-request-id')!;
    await until(() => reporting.recorder.lastRecord(id) !== undefined);
    const rec = reporting.recorder.lastRecord(id)!;
    // Default table: $1/M, $0.10/M cached, $4/M output.
    expect(rec.costNusd).toBe((rec.promptTokens - 2) * 1000 + 2 * 100 + rec.outputTokens * 4000);
    // the record's event fields, nothing it adds (cost, pricing source)
    const ev = pick(rec, [
      'time',
      'requestId',
      'tenant',
      'keyId',
      'sessionId',
      'model',
      'worker',
      'status',
      'stream',
      'promptTokens',
      'cachedTokens',
      'outputTokens',
    ]);
    expect(reporting.headersFor({ ...ev, usageReported: true, totalMs: 1, gatewayOverheadMs: 0, attempts: 1 })).toEqual(
      {
        'x-ctxgate-cached-tokens': '2',
        'x-ctxgate-cost-usd': (rec.costNusd / 1e9).toString(),
      },
    );

    const rep = (await (await fetch(`${gw.url}/v1/gateway/report?group_by=model`)).json()) as {
      totals: { requests: number; cost_nusd: number };
    };
    expect(rep.totals).toMatchObject({ requests: 1, cost_nusd: rec.costNusd }); // the report flushes queued records first
    const metrics = await (await fetch(`${gw.url}/metrics`)).text();
    expect(metrics).toMatch(/ctxgate_cost_usd_total\{model="m1",tenant="default",kind="output"\}/);

    // A record is on disk right after the job that produced it (one line in the ledger's journal),
    // not at the next flush_ms or at shutdown; SQLite gets it in the next batch (here: the shutdown flush).
    const r2 = await client.chat.completions
      .create({ model: 'm1', messages: [{ role: 'user', content: 'again' }] })
      .withResponse();
    const id2 = r2.response.headers.get('x-request-id')!;
    await until(() => reporting.recorder.lastRecord(id2) !== undefined);
    expect(readFileSync(path + JOURNAL_SUFFIX, 'utf8')).toContain(JSON.stringify(id2));
    await gw.close();
    await up.close();
    const reopened = new SqliteLedger({ path, retentionDays: 90, batchSize: 10, flushMs: 1000, readonly: true });
    expect(reopened.count()).toBe(2);
    await reopened.close();
  });

  it('rejects a config whose model has no price when the table has no default', () => {
    const config = parseConfig({
      models: [{ name: 'm1', workers: [{ url: 'http://127.0.0.1:1' }] }],
      ledger: { path: join(dir, 'x.sqlite') },
    });
    expect(() => createReporting(config, { pricingTable: { models: {} } })).toThrow(PricingError);
  });
});
