// bench chaos's warm-up: rounds until the gateway's heap after GC stops growing (its bounded caches
// full), bounded; and every load run's sessions are its own, so a warm-up round's sessions never
// continue into the next round or the measured run.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { emptyStats, runLoad } from '../../loadtest/chaos/load.ts';
import { CHAOS_WARMUP_MAX_ROUNDS, CHAOS_WARMUP_MIN_ROUNDS, chaosWarmUpDone } from '../../loadtest/chaos/warm-up.ts';
import { generateSessions } from '../../loadtest/synth/index.ts';

describe('bench chaos warm-up rule', () => {
  it('is warm once the heap after GC grew < 3 % over the last two rounds, after the minimum rounds; bounded', () => {
    expect(chaosWarmUpDone([50])).toBeUndefined();
    expect(CHAOS_WARMUP_MIN_ROUNDS).toBe(3);
    expect(chaosWarmUpDone([50, 56])).toBeUndefined(); // +12 %: caches still filling
    expect(chaosWarmUpDone([50, 56, 59])).toBeUndefined(); // +18 % over two rounds
    expect(chaosWarmUpDone([50, 56, 59, 60])).toBeUndefined(); // +7.1 % over two rounds
    expect(chaosWarmUpDone([50, 56, 59, 60, 60.5])).toBe(true); // +2.5 %
    expect(chaosWarmUpDone([50, 49])).toBeUndefined(); // too early to tell
    expect(chaosWarmUpDone([50, 49, 49.5])).toBe(true); // no growth over two rounds
    // the quoted run's warm-up (MB): one round under 3 % (59.0 → 59.5) no longer ends it
    expect(chaosWarmUpDone([52.3, 55.4, 57.1, 59.0, 59.5])).toBeUndefined();
    // a leak grows every round: the bound stops it, reported as not settled
    const leak = Array.from({ length: CHAOS_WARMUP_MAX_ROUNDS }, (_, i) => 50 * 1.1 ** i);
    expect(chaosWarmUpDone(leak.slice(0, -1))).toBeUndefined();
    expect(chaosWarmUpDone(leak)).toBe(false);
    // an unreadable heap never settles
    expect(chaosWarmUpDone([Number.NaN, Number.NaN])).toBeUndefined();
    expect(chaosWarmUpDone(Array(CHAOS_WARMUP_MAX_ROUNDS).fill(Number.NaN))).toBe(false);
  });
});

describe('bench chaos load runs', () => {
  const sids: string[] = [];
  let server: Server;
  afterAll(() => new Promise<void>((r) => server?.close(() => r())));

  it('name their sessions by the run (warm-up rounds and the measured run never share one)', async () => {
    server = createServer((req, res) => {
      sids.push(String(req.headers['x-session-id']));
      let body = '';
      req.on('data', (d) => (body += d));
      req.on('end', () => {
        if ((JSON.parse(body) as { stream?: boolean }).stream) {
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          res.end('data: {"choices":[]}\n\ndata: [DONE]\n\n');
        } else {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end('{"choices":[]}');
        }
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const sessions = generateSessions({ count: 2, minCalls: 2, maxCalls: 3, model: 'm' });
    const run = async (idPrefix: string) => {
      const stats = emptyStats();
      await runLoad({
        url,
        model: 'm',
        sessions,
        concurrency: 2,
        untilMs: Date.now() + 300,
        idleTimeoutMs: 5_000,
        maxTokens: 8,
        stats,
        idPrefix,
      });
      return stats;
    };
    const a = await run('warmup0');
    const warm = new Set(sids.splice(0));
    const b = await run('chaos');
    const measured = new Set(sids);
    expect(a.succeeded).toBeGreaterThan(0);
    expect(b.succeeded).toBeGreaterThan(0);
    expect([...warm].every((s) => s.startsWith('warmup0-'))).toBe(true);
    expect([...measured].every((s) => s.startsWith('chaos-'))).toBe(true);
    expect([...measured].filter((s) => warm.has(s))).toEqual([]);
  });
});
