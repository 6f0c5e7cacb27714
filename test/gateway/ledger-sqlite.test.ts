// SQLite ledger: batches persist, survive a restart (close + reopen the file), retention deletes
// old rows, a full queue or a failing store drops records (counted) without throwing.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BatchQueue } from '../../gateway/accounting/stores/batch-queue.ts';
import { SqliteLedger } from '../../gateway/accounting/stores/sqlite.ts';
import type { UsageRecord } from '../../gateway/accounting/types/usage.ts';
import { usageRecord } from '../helpers/usage.ts';
import { until } from '../helpers/until.ts';

const dir = mkdtempSync(join(tmpdir(), 'ctxgate-ledger-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
function rec(i: number, time = Date.now()): UsageRecord {
  const tenant = i % 2 ? 'odd' : 'even';
  return usageRecord(i, { time, tenant, sessionId: `s${i % 3}`, promptTokens: 1000 + i, cachedTokens: 500 });
}

const opts = (path: string) => ({ path, retentionDays: 30, batchSize: 8, flushMs: 20 });

describe('SqliteLedger', () => {
  it('survives a restart: close, reopen the file, rows still there', async () => {
    const path = join(dir, 'restart.sqlite');
    const a = new SqliteLedger(opts(path));
    const written = Array.from({ length: 25 }, (_, i) => rec(i));
    for (const r of written) a.append(r);
    await a.close(); // close flushes what is queued
    expect(a.stats()).toMatchObject({ appended: 25, written: 25, dropped: 0 });

    const b = new SqliteLedger(opts(path));
    const rows: UsageRecord[] = [];
    for await (const r of b.query()) rows.push(r);
    expect(rows.map((r) => r.requestId)).toEqual(written.map((r) => r.requestId));
    expect(rows[7]).toEqual(written[7]);
    const odd: string[] = [];
    for await (const r of b.query({ tenant: 'odd', limit: 3 })) odd.push(r.requestId);
    expect(odd).toEqual(['r1', 'r3', 'r5']);
    expect(b.db.pragma('journal_mode', { simple: true })).toBe('wal');
    await b.close();
  });

  it('writes a batch on its own once batch_size records are queued (no flush call)', async () => {
    const l = new SqliteLedger({ ...opts(join(dir, 'batch.sqlite')), flushMs: 60_000 });
    for (let i = 0; i < 8; i++) l.append(rec(i));
    expect(l.count()).toBe(0); // append never writes inline
    await until(() => l.count() === 8); // flush_ms is a minute away: only the full batch writes it
    expect(l.count()).toBe(8);
    await l.close();
  });

  it('retention deletes rows older than retention_days', async () => {
    const path = join(dir, 'retention.sqlite');
    const l = new SqliteLedger(opts(path));
    const now = Date.now();
    l.append(rec(1, now - 40 * 86_400_000));
    l.append(rec(2, now - 29 * 86_400_000));
    l.append(rec(3, now));
    await l.flush();
    expect(l.prune(now)).toBe(1);
    const ids: string[] = [];
    for await (const r of l.query()) ids.push(r.requestId);
    expect(ids).toEqual(['r2', 'r3']);
    await l.close();
  });

  it('a full queue drops (and counts) instead of blocking or throwing', async () => {
    const drops: number[] = [];
    const l = new SqliteLedger({
      ...opts(join(dir, 'full.sqlite')),
      maxQueue: 5,
      batchSize: 100,
      flushMs: 60_000,
      onDrop: (n) => drops.push(n),
    });
    for (let i = 0; i < 12; i++) l.append(rec(i));
    expect(l.stats()).toMatchObject({ appended: 12, dropped: 7, queued: 5 });
    expect(drops.reduce((a, b) => a + b, 0)).toBe(7);
    await l.close();
    expect(l.count).toBeTypeOf('function');
  });

  it('a failing write drops the batch, counts it, and keeps accepting records', async () => {
    let fail = true;
    const stored: number[] = [];
    const errors: unknown[] = [];
    const q = new BatchQueue<number>({
      batchSize: 3,
      flushMs: 60_000,
      write: (b) => {
        if (fail) throw new Error('disk full');
        stored.push(...b);
      },
      onError: (e) => errors.push(e),
    });
    [1, 2, 3, 4].forEach((x) => q.push(x));
    await q.drain();
    expect(q.stats()).toMatchObject({ dropped: 4, written: 0 });
    expect(errors).toHaveLength(2);
    fail = false;
    q.push(5);
    await q.close();
    expect(stored).toEqual([5]);
    q.push(6); // after close: dropped, not thrown
    expect(q.stats().dropped).toBe(5);
  });

  it('keepFailed: a failed batch is retried in order at the next flush, and given up after that many writes', async () => {
    let fail = 1;
    const stored: number[] = [];
    const given: number[][] = [];
    const q = new BatchQueue<number>({
      batchSize: 2,
      flushMs: 60_000,
      keepFailed: 3,
      eager: false,
      discarded: (b) => given.push(b),
      write: (b) => {
        if (fail-- > 0) throw new Error('database is locked');
        stored.push(...b);
      },
    });
    [1, 2, 3].forEach((x) => q.push(x));
    await q.drain();
    await q.drain();
    expect(stored).toEqual([1, 2, 3]); // the failed batch first, in order
    expect(q.stats()).toMatchObject({ dropped: 0, written: 3, queued: 0 });
    fail = 99;
    [4, 5].forEach((x) => q.push(x));
    for (let i = 0; i < 3; i++) await q.drain();
    expect(q.stats()).toMatchObject({ dropped: 2, queued: 0 });
    expect(given).toEqual([[4, 5]]);
    await q.close();
  });
});

describe('createSpendLookup', () => {
  it('sums a tenant’s cost since an instant, queued records included', async () => {
    const { createSpendLookup } = await import('../../gateway/accounting/stores/spend.ts');
    const l = new SqliteLedger({ ...opts(join(dir, 'spend.sqlite')), flushMs: 60_000, batchSize: 1000 });
    const now = Date.now();
    const rs = [rec(1, now - 2 * 86_400_000), rec(3, now), rec(5, now), rec(2, now)];
    rs.forEach((r) => l.append(r));
    const spend = createSpendLookup(l);
    const want = (rs[1].costNusd + rs[2].costNusd) / 1e9;
    expect(await spend('odd', now - 86_400_000)).toBeCloseTo(want, 12);
    expect(await spend('nobody', 0)).toBe(0);
    await l.close();
  });
});
