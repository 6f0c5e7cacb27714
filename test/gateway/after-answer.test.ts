// The after-answer queue (gateway/proxy/after-answer.ts): a request's accounting (metrics, request
// record, usage ledger) runs after the event loop polled again, never before a setImmediate queued
// with it; and every reader of what it files drains it first, so a reader never sees a request
// answered but not accounted. The gateway tests hold the queue (a scheduler that never fires on
// its own), so each reader's drain is what files the record, whatever the machine's speed.
import { mkdtempSync, rmSync, stat } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createReporting } from '../../gateway/accounting/routes/reporting.ts';
import { SqliteLedger } from '../../gateway/accounting/stores/sqlite.ts';
import { parseConfig } from '../../gateway/config/load.ts';
import { AfterAnswer } from '../../gateway/proxy/after-answer.ts';
import { startGateway } from '../../gateway/server.ts';
import type { UsageEvent } from '../../gateway/usage-event.ts';
import { startFakeUpstream } from '../helpers/fake-upstream.ts';
import { startRig, type TestRig } from '../helpers/gateway.ts';
import { keysAuth } from '../helpers/keys.ts';

/** Resolves inside an I/O callback (the poll phase): the loop's check phase comes next. */
const inPollPhase = (): Promise<void> => new Promise((r) => stat('.', () => r()));

describe('AfterAnswer', () => {
  it('runs its jobs in order, after a setImmediate queued with them, once per scheduled run', async () => {
    const q = new AfterAnswer();
    const seen: string[] = [];
    await inPollPhase();
    q.push(() => seen.push('job 1'));
    q.push(() => seen.push('job 2'));
    const immediate = new Promise<void>((r) =>
      setImmediate(() => {
        seen.push('immediate');
        r();
      }),
    );
    expect(seen).toEqual([]);
    expect(q.pending).toBe(2);
    await immediate;
    expect(seen).toEqual(['immediate']);
    await new Promise((r) => setTimeout(r, 20));
    expect(seen).toEqual(['immediate', 'job 1', 'job 2']);
    expect(q.pending).toBe(0);
  });

  it('drain() runs what is queued now; a job that throws is reported and the others still run', async () => {
    const runs: (() => void)[] = [];
    const q = new AfterAnswer((run) => runs.push(run));
    const seen: number[] = [];
    const warnings: string[] = [];
    const onWarning = (w: Error): void => {
      warnings.push(w.message);
    };
    process.on('warning', onWarning);
    try {
      q.push(() => seen.push(1));
      q.push(() => {
        throw new Error('boom');
      });
      q.push(() => seen.push(3));
      expect(runs).toHaveLength(1); // one run for the batch
      q.drain();
      expect(seen).toEqual([1, 3]);
      q.push(() => seen.push(4)); // rides with the run still scheduled
      expect(runs).toHaveLength(1);
      runs[0]();
      expect(seen).toEqual([1, 3, 4]);
      q.push(() => seen.push(5));
      expect(runs).toHaveLength(2);
      await new Promise((r) => setImmediate(r)); // process warnings are emitted on the next tick
      expect(warnings).toEqual(['ctxgate: request accounting threw: boom']);
    } finally {
      process.off('warning', onWarning);
    }
  });
});

describe('the gateway files each request after its answer; readers drain first', () => {
  let rig: TestRig;
  const usage: UsageEvent[] = [];
  // Never runs on its own: only the readers' drains (and shutdown's) file anything.
  const held = new AfterAnswer(() => undefined);
  beforeAll(async () => {
    rig = await startRig({ deps: { afterAnswer: held, onUsage: (ev) => usage.push(ev) } });
  });
  afterAll(async () => rig.close());

  const chat = (id: string) =>
    rig
      .client()
      .chat.completions.create(
        { model: 'm1', messages: [{ role: 'user', content: `hi ${id}` }] },
        { headers: { 'x-request-id': id } },
      );

  it('the request record: answered, queued, then served by the records route', async () => {
    await chat('aa-1');
    expect(held.pending).toBe(1);
    expect(usage).toHaveLength(0);
    const res = await fetch(`${rig.gw.url}/v1/gateway/requests/aa-1`);
    expect(res.status).toBe(200);
    const rec = (await res.json()) as { id: string; status: number; attemptLog: { outcome: string }[] };
    expect(rec).toMatchObject({ id: 'aa-1', status: 200 });
    expect(rec.attemptLog.map((a) => a.outcome)).toEqual(['ok']);
    expect(held.pending).toBe(0);
    expect(usage.map((u) => u.requestId)).toEqual(['aa-1']);
  });

  it('the metrics: a scrape counts every answered request', async () => {
    const before = await (await fetch(`${rig.gw.url}/metrics`)).text();
    const count = (text: string): number =>
      Number(/ctxgate_requests_total\{model="m1",tenant="[^"]*",status="2xx",api="[^"]*"\} (\d+)/.exec(text)?.[1] ?? 0);
    await chat('aa-2');
    await chat('aa-3');
    expect(held.pending).toBe(2);
    const after = await (await fetch(`${rig.gw.url}/metrics`)).text();
    expect(count(after) - count(before)).toBe(2);
    expect(held.pending).toBe(0);
    expect(usage.map((u) => u.requestId)).toEqual(['aa-1', 'aa-2', 'aa-3']);
  });

  it('shutdown files what is still queued before the ledger closes', async () => {
    await chat('aa-4');
    expect(held.pending).toBe(1);
    await rig.gw.close();
    expect(held.pending).toBe(0);
    expect(usage.at(-1)?.requestId).toBe('aa-4');
  });
});

describe('the report route and the budgets read the ledger after draining the queue', () => {
  const KEYS = { a: 'sk-after-answer-a-0123', b: 'sk-after-answer-b-0123' };
  const dir = mkdtempSync(join(tmpdir(), 'ctxgate-after-answer-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('GET /v1/gateway/report counts a request still queued; a spend lookup finds the queue empty', async () => {
    const up = await startFakeUpstream({ name: 'w1' });
    const config = parseConfig({
      listen: { host: '127.0.0.1', port: 0 },
      auth: keysAuth(KEYS),
      health: { interval_ms: 0 },
      budgets: [
        { tenant: 'a', usd_per_day: 100 },
        { tenant: 'b', usd_per_day: 100 },
      ],
      models: [
        {
          name: 'm1',
          layout: 'passthrough',
          workers: [{ url: up.url, id: 'w1' }],
          pricing: { input_per_mtok: 2, cached_input_per_mtok: 0.5, output_per_mtok: 8 },
        },
      ],
    });
    const ledger = new SqliteLedger({ path: join(dir, 'usage.sqlite'), retentionDays: 90, batchSize: 16, flushMs: 20 });
    const reporting = createReporting(config, { ledger, pricingTable: null });
    const held = new AfterAnswer(() => undefined);
    const pendingAtLookup: number[] = [];
    const gw = await startGateway(config, {
      logger: false,
      ...reporting.deps,
      spendSince: (tenant, since) => {
        pendingAtLookup.push(held.pending);
        return reporting.deps.spendSince(tenant, since);
      },
      afterAnswer: held,
    });
    try {
      const ask = (key: string) =>
        fetch(`${gw.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
          body: JSON.stringify({ model: 'm1', messages: [{ role: 'user', content: 'hi' }] }),
        });
      expect((await ask(KEYS.a)).status).toBe(200);
      expect(held.pending).toBe(1);
      // Tenant b's first request looks its spend up: the queue is drained before the ledger is read.
      expect((await ask(KEYS.b)).status).toBe(200);
      expect(pendingAtLookup).toEqual([0, 0]);
      expect(held.pending).toBe(1);
      const res = await fetch(`${gw.url}/v1/gateway/report?group_by=tenant`, {
        headers: { authorization: `Bearer ${KEYS.b}` },
      });
      expect(res.status).toBe(200);
      const j = (await res.json()) as { totals: { requests: number } };
      expect(j.totals.requests).toBe(1); // b's own request, filed by the route's drain
      expect(held.pending).toBe(0);
    } finally {
      await gw.close();
      await reporting.close();
      await up.close();
    }
  });
});
