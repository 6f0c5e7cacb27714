// bench overhead's critical path (loadtest/overhead/critical-path.ts): the hops of each call are
// the differences of its points, client to client, read as medians, and points from before the
// run's start (a straggler of the call before a reset) are left out rather than shifting every
// later call onto the wrong points; the gateway's own watcher records a real request's points in
// order through Node's and undici's channels.
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { once } from 'node:events';
import { Pool } from 'undici';
import { describe, expect, it } from 'vitest';
import {
  directCriticalPath,
  formatCriticalPath,
  gatewayCriticalPath,
  watchGatewayPath,
} from '../../loadtest/overhead/critical-path.ts';

/** Call i starts at 100·i: client send +0, head +1, body read +1.5, dispatched +2.5, writing +2.75, written +3,
 *  upstream read +4, answered +6, gateway read its end +7, answer written +8, client end +9 (ms). */
function calls(n: number) {
  const at = (i: number, d: number): number => 1000 + 100 * i + d;
  const idx = Array.from({ length: n }, (_, i) => i);
  return {
    client: { end: idx.map((i) => at(i, 9)), ms: idx.map(() => 9) },
    gw: {
      arrival: idx.map((i) => at(i, 1)),
      bodyRead: idx.map((i) => at(i, 1.5)),
      dispatched: idx.map((i) => at(i, 2.5)),
      writing: idx.map((i) => at(i, 2.75)),
      written: idx.map((i) => at(i, 3)),
      upEnd: idx.map((i) => at(i, 7)),
      answered: idx.map((i) => at(i, 8)),
    },
    spans: idx.map((i) => [at(i, 4), at(i, 6)] as [number, number]),
  };
}

describe('bench overhead critical path', () => {
  it('splits each call into its hops, client to client, and drops points from before the start', () => {
    const c = calls(5);
    // a straggler of the call before the reset on two of the lists
    c.gw.answered.unshift(900);
    c.spans.unshift([880, 890]);
    const p = gatewayCriticalPath(c.client, c.gw, c.spans, 1000);
    expect(p.calls).toBe(5);
    expect(p.call_ms).toBe(9);
    expect(p.hops.map((h) => h.ms)).toEqual([1, 0.5, 1, 0.25, 0.25, 4, 1, 1]);
    expect(p.hops.reduce((a, h) => a + h.ms, 0)).toBe(9);
    expect(p.upstream_ms).toBe(2);
    const d = directCriticalPath(c.client, c.spans, 1000);
    expect(d.hops.map((h) => h.ms)).toEqual([9]);
    expect(d.upstream_ms).toBe(2);
    expect(formatCriticalPath('ctxgate', p)).toContain('sum of the medians');
  });

  it('records a proxied request’s points in order through the channels', async () => {
    const watch = watchGatewayPath();
    const upstream = createServer((req, res) => {
      req.resume();
      req.on('end', () => res.end('{}'));
    }).listen(0, '127.0.0.1');
    await once(upstream, 'listening');
    const pool = new Pool(`http://127.0.0.1:${(upstream.address() as AddressInfo).port}`);
    const gateway = createServer((req, res) => {
      req.resume();
      req.on('end', async () => {
        const r = await pool.request({ method: 'POST', path: '/', body: Buffer.from('{"x":1}') });
        await r.body.text();
        res.end('{}');
      });
    }).listen(0, '127.0.0.1');
    await once(gateway, 'listening');
    try {
      watch.reset();
      const t0 = performance.timeOrigin + performance.now();
      // node:http, not fetch: Node's fetch is undici too and would publish on the same channels
      await new Promise<void>((resolve, reject) => {
        const req = request(
          { host: '127.0.0.1', port: (gateway.address() as AddressInfo).port, method: 'POST', path: '/' },
          (res) => {
            res.resume();
            res.on('end', resolve);
          },
        );
        req.on('error', reject);
        req.end('{}');
      });
      const p = watch.path();
      // the gateway's own request and the upstream's both hit the server channels: the gateway's first
      expect(p.dispatched.length).toBe(1);
      expect(p.writing.length).toBe(1);
      expect(p.written.length).toBe(1);
      expect(p.upEnd.length).toBe(1);
      const [arrival] = p.arrival;
      const answered = p.answered.at(-1)!;
      expect(arrival).toBeGreaterThanOrEqual(t0);
      // the gateway's request body ended before it dispatched (its 'end' handler dispatches)
      expect(p.bodyRead[0]).toBeGreaterThanOrEqual(arrival);
      expect(p.dispatched[0]).toBeGreaterThanOrEqual(p.bodyRead[0]);
      expect(p.writing[0]).toBeGreaterThanOrEqual(p.dispatched[0]);
      expect(p.written[0]).toBeGreaterThanOrEqual(p.writing[0]);
      expect(p.upEnd[0]).toBeGreaterThanOrEqual(p.written[0]);
      expect(answered).toBeGreaterThanOrEqual(p.upEnd[0]);
    } finally {
      await pool.close();
      gateway.closeAllConnections();
      gateway.close();
      upstream.close();
    }
  });
});
