// The usage ledger survives what kills a gateway: `ctxgate serve` in a real child process is
// killed with SIGKILL right after a burst of answered requests whose records the ledger has taken
// (the record is written just after the response ends, so the test waits for each request's record
// to be visible, which happens in the same tick as the ledger append) and its SQLite file, once
// reopened by a writer (which commits the journal), must hold every one of them; a Redis outage (our own redis-server child, stopped and
// restarted on the same port) spools records to a local file and forwards them on recovery;
// with `ledger.stores: [redis, sqlite]` both stores get every record; `bench chaos` writes its
// ledger in its own temp dir, never the default file in the working directory.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import OpenAI from 'openai';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { parseConfig } from '../../gateway/config/load.ts';
import { DEFAULT_LEDGER_PATH } from '../../gateway/config/schema.ts';
import { openLedger } from '../../gateway/accounting/stores/open.ts';
import { RedisStreamLedger } from '../../gateway/accounting/stores/redis-stream.ts';
import { SqliteLedger } from '../../gateway/accounting/stores/sqlite.ts';
import { TeeLedger } from '../../gateway/accounting/stores/tee.ts';
import type { UsageRecord } from '../../gateway/accounting/types/usage.ts';
import { usageRecord } from '../helpers/usage.ts';
import { gatewayConfig } from '../../loadtest/bench-chaos.ts';
import { startGatewayProc } from '../../loadtest/chaos/gateway-proc.ts';
import { startRedisProcOnSocket } from '../../loadtest/chaos/redis-proc.ts';
import { startSimWorker, type SimWorker } from '../../loadtest/sim-worker/index.ts';
import { requestRecord } from '../helpers/request-record.ts';
import { until } from '../helpers/until.ts';

const dir = mkdtempSync(join(tmpdir(), 'ctxgate-durable-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
function rec(i: number, tenant = 't'): UsageRecord {
  return usageRecord(i, { tenant, promptTokens: 100 + i, cachedTokens: 50, outputTokens: 5 }, 'd');
}

/** How long Redis may take to answer or come back on a loaded machine: a bound for a hang only. */
const REDIS_WAIT_MS = 60_000;

describe('kill -9 after a burst', () => {
  it('loses none of 150 answered requests whose records the ledger took', async () => {
    const worker: SimWorker = await startSimWorker({ port: 0, model: 'm', tokenizer: 'qwen3', timeScale: 0, seed: 1 });
    const ledgerPath = join(dir, 'kill9.sqlite');
    const cfg = join(dir, 'kill9.yaml');
    // flush_ms far beyond the test: only the per-record journal write can get the records to disk in time.
    writeFileSync(
      cfg,
      [
        'listen: { host: 127.0.0.1, port: 0 }',
        'health: { interval_ms: 0 }',
        `ledger: { path: '${ledgerPath}', flush_ms: 600000, batch_size: 100000 }`,
        'models:',
        '  - { name: m, layout: passthrough, policy: round_robin, workers: [{ url: "' + worker.url + '", id: w0 }] }',
        '',
      ].join('\n'),
    );
    const gw = await startGatewayProc(cfg);
    try {
      const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'none', maxRetries: 0, timeout: 20_000 });
      let answered = 0;
      const one = async (i: number): Promise<void> => {
        try {
          await client.chat.completions.create(
            { model: 'm', messages: [{ role: 'user', content: `burst ${i}` }], max_tokens: 4 },
            { headers: { 'x-request-id': `burst-${i}` } },
          );
        } catch (err) {
          // what the child said (stderr, warn/error logs) tells a crash from a refused request
          const cause = (err as { cause?: unknown }).cause;
          throw new Error(`burst ${i}: ${String(err)} (cause: ${String(cause)}); gateway: ${gw.errors.join(' | ')}`);
        }
        answered++;
      };
      for (let i = 0; i < 150; i += 15) await Promise.all(Array.from({ length: 15 }, (_, j) => one(i + j)));
      expect(answered).toBe(150);
      // The request record and the ledger append happen in one synchronous block (finish.ts).
      for (let i = 0; i < 150; i++) await requestRecord(gw.url, `burst-${i}`);
      process.kill(gw.pid, 'SIGKILL');
      // Until the process is gone its journal lock is held, and a writer opened meanwhile runs
      // without replaying (a fixed sleep here read 0 records on a loaded machine).
      await gw.exited;
      // The next writer to open the file (a restarted gateway) commits what the journal holds.
      const errors: unknown[] = [];
      const l = new SqliteLedger({
        path: ledgerPath,
        retentionDays: 30,
        batchSize: 10,
        flushMs: 1000,
        onError: (e) => errors.push(e),
      });
      expect(errors).toEqual([]); // it took the journal's lock and replayed
      const n = (l.db.prepare('SELECT COUNT(*) AS n FROM usage').get() as { n: number }).n;
      await l.close();
      expect(n).toBe(150);
    } finally {
      try {
        process.kill(gw.pid, 'SIGKILL');
      } catch {
        /* already gone */
      }
      await worker.close();
    }
  });
});

describe('Redis outage', () => {
  it('spools records while Redis is down and forwards them when it is back', async () => {
    // stopped and restarted at the same address below: a unix socket of its own, which (unlike a
    // TCP port) no other process can take meanwhile
    const redis = await startRedisProcOnSocket();
    const url = redis.url;
    const admin = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
    admin.on('error', () => undefined); // refused while the server is down, by design
    await admin.connect(); // start() returned once the server answered
    const key = 'ctxgate:usage:outage';
    const spoolPath = join(dir, 'outage.spool');
    const l = new RedisStreamLedger({ url, key, batchSize: 16, flushMs: 50, spoolPath });
    try {
      await l.ready(REDIS_WAIT_MS);
      for (let i = 0; i < 20; i++) l.append(rec(i));
      await l.flush();
      expect(await admin.xlen(key)).toBe(20);

      const lost = new Promise((r) => l.redis.once('close', r)); // the ledger's link saw the kill
      await redis.kill();
      await lost;
      for (let i = 20; i < 70; i++) l.append(rec(i));
      await l.flush();
      expect(l.stats()).toMatchObject({ dropped: 0, spooled: 50 });

      await redis.start();
      // forwarded on the ledger's own reconnect (its retry backoff), not on a call from here
      await until(async () => (await admin.xlen(key).catch(() => -1)) >= 50, REDIS_WAIT_MS);
      await until(() => (l.stats().forwarded ?? 0) === 50, REDIS_WAIT_MS);
      expect(await admin.xlen(key)).toBe(50); // the restarted server kept nothing: exactly the outage's records
      const ids = (await admin.xrange(key, '-', '+')).map(([, f]) => (JSON.parse(f[1]) as UsageRecord).requestId);
      expect(new Set(ids)).toEqual(new Set(Array.from({ length: 50 }, (_, i) => `r${i + 20}`)));
      expect(l.spool!.pending()).toBe(false);
    } finally {
      await l.close();
      admin.disconnect();
      await redis.dispose();
    }
  });

  it('with both stores on, every record reaches SQLite and Redis; reads come from Redis', async () => {
    const url = inject('redisUrl');
    expect(url, 'redis-server must be running (test/global-setup.ts)').not.toBe('');
    const path = join(dir, 'both.sqlite');
    const config = parseConfig(
      {
        listen: { port: 0 },
        redis: { url },
        ledger: { path, flush_ms: 50 },
        models: [{ name: 'm', workers: [{ url: 'http://127.0.0.1:1' }] }],
      },
      'both',
    );
    const ledger = openLedger(config);
    expect(ledger).toBeInstanceOf(TeeLedger);
    // Connected before the first batch: on a host that takes over 1 s to make the link, a batch
    // would go through the spool and its forwarding (the outage test's subject), not the tee.
    const stream = (ledger as TeeLedger).stores[0];
    expect(stream).toBeInstanceOf(RedisStreamLedger);
    await (stream as RedisStreamLedger).ready(REDIS_WAIT_MS);
    const tenant = `tee-${Date.now()}`;
    for (let i = 0; i < 30; i++) ledger.append(rec(i, tenant));
    await ledger.flush();
    let fromRedis = 0;
    for await (const r of ledger.query({ tenant })) fromRedis += r.tenant === tenant ? 1 : 0;
    expect(fromRedis).toBe(30);
    await ledger.close();
    const sqlite = new SqliteLedger({ path, retentionDays: 30, batchSize: 10, flushMs: 1000, readonly: true });
    expect(sqlite.count()).toBe(30);
    await sqlite.close();
    // Explicit choice: Redis alone keeps no local file.
    const only = parseConfig(
      {
        listen: { port: 0 },
        redis: { url },
        ledger: { path: join(dir, 'never.sqlite'), stores: ['redis'] },
        models: [{ name: 'm', workers: [{ url: 'http://127.0.0.1:1' }] }],
      },
      'r',
    );
    const r = openLedger(only);
    expect(r).toBeInstanceOf(RedisStreamLedger);
    await r.close();
  });
});

describe('benchmarks and the default ledger', () => {
  it("bench chaos's gateway writes its ledger in the run's temp dir", () => {
    const runDir = join(dir, 'chaos-run');
    const cfg = parseConfig(parseYaml(gatewayConfig(['http://127.0.0.1:1'], runDir)), 'chaos');
    expect(cfg.ledger.path).toBe(join(runDir, 'usage.sqlite'));
    expect(cfg.ledger.path).not.toBe(DEFAULT_LEDGER_PATH);
  });
});
