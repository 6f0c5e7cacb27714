// Redis Stream ledger round trip against the real redis-server from the global setup.
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { RedisStreamLedger } from '../../gateway/accounting/stores/redis-stream.ts';
import { buildReport } from '../../gateway/accounting/report/render.ts';
import type { UsageRecord } from '../../gateway/accounting/types/usage.ts';
import { usageRecord } from '../helpers/usage.ts';

const url = inject('redisUrl');
const key = `ctxgate:usage:test:${process.pid}:${Date.now()}`;
const admin = new Redis(url);
afterAll(async () => {
  await admin.del(key);
  admin.disconnect();
});

function rec(i: number, tenant: string, time: number): UsageRecord {
  return usageRecord(i, { time, tenant, stream: true, promptTokens: 2000, cachedTokens: 1500, outputTokens: 20 });
}

describe('RedisStreamLedger', () => {
  it('two replicas append, a reader gets every record back and the report totals match', async () => {
    expect(url, 'redis-server must be running (test/global-setup.ts)').not.toBe('');
    const a = new RedisStreamLedger({ url, key, batchSize: 4, flushMs: 20 });
    const b = new RedisStreamLedger({ url, key, batchSize: 4, flushMs: 20 });
    const t = Date.now();
    const recs = Array.from({ length: 10 }, (_, i) => rec(i, i < 6 ? 'blue' : 'green', t + i));
    recs.forEach((r, i) => (i % 2 ? a : b).append(r));
    await Promise.all([a.close(), b.close()]);
    expect(await admin.xlen(key)).toBe(10);

    const reader = new RedisStreamLedger({ url, key, batchSize: 4, flushMs: 20 });
    const got: UsageRecord[] = [];
    for await (const r of reader.query({ since: t })) got.push(r);
    expect(got.map((r) => r.requestId).sort()).toEqual(recs.map((r) => r.requestId).sort());
    expect(got.find((r) => r.requestId === 'r3')).toEqual(recs[3]);

    const green: string[] = [];
    for await (const r of reader.query({ tenant: 'green' })) green.push(r.requestId);
    expect(green.sort()).toEqual(['r6', 'r7', 'r8', 'r9']);

    const report = await buildReport(reader, { groupBy: 'tenant' });
    expect(report.totals.requests).toBe(10);
    expect(report.totals.costNusd).toBe(recs.reduce((s, r) => s + r.costNusd, 0));
    expect(report.groups.map((g) => [g.key, g.requests])).toEqual([
      ['blue', 6],
      ['green', 4],
    ]);
    await reader.close();
  });

  it('retention trims entries appended before now − retention_days', async () => {
    const k2 = `${key}:retention`;
    const l = new RedisStreamLedger({ url, key: k2, batchSize: 10, flushMs: 20 });
    for (let i = 0; i < 3; i++) l.append(rec(i, 'x', Date.now()));
    await l.flush();
    expect(await l.prune(30)).toBe(0);
    expect(await admin.xlen(k2)).toBe(3);
    await l.prune(30, Date.now() + 31 * 86_400_000);
    expect(await admin.xlen(k2)).toBe(0);
    await l.close();
    await admin.del(k2);
  });

  it('an unreachable Redis drops and counts records; append never throws', async () => {
    const l = new RedisStreamLedger({ url: 'redis://127.0.0.1:1', key, batchSize: 2, flushMs: 20 });
    l.append(rec(1, 'x', Date.now()));
    l.append(rec(2, 'x', Date.now()));
    await l.close();
    expect(l.stats()).toMatchObject({ appended: 2, dropped: 2, written: 0 });
  });
});
