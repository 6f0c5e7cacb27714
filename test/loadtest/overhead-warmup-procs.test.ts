// bench overhead's honesty: (1) each target is warmed by one rule, past the optimizing
// compiler's ~4,000 calls and until its process's CPU per call stays near its lowest (bounded),
// not for a fixed second that left the 16k rows measuring V8's optimizing compiler nor until the
// first noisy chunk; (2) the bare proxy and ctxgate run in their own processes (with the
// gateway's Node flags), so one row never carries the other's GCs or compile threads.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GATEWAY_NODE_FLAGS } from '../../gateway/node-flags.ts';
import { bareProxyNodeArgs, chatBody, proxiesNodeArgs } from '../../loadtest/bench-overhead.ts';
import { child, load, type Child } from '../../loadtest/overhead/load.ts';
import { processCpuMs } from '../../loadtest/overhead/proc-cpu.ts';
import {
  WARMUP_CHUNK_CALLS,
  WARMUP_MAX_CHUNKS,
  WARMUP_MAX_S,
  WARMUP_MIN_CHUNKS,
  warmUp,
  fmtWarmUp,
  warmUpDone,
} from '../../loadtest/overhead/warm-up.ts';

/** Chat calls the gateway at `url` answered so far (its ctxgate_requests_total, all series). */
async function answered(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  let n = 0;
  for (const line of text.split('\n'))
    if (line.startsWith('ctxgate_requests_total')) n += Number(line.split(' ').pop());
  return n;
}

const here = (f: string): string => fileURLToPath(new URL(`../../loadtest/${f}`, import.meta.url));

describe('bench overhead warm-up rule', () => {
  it('is warm after the floor once two chunks in a row cost within 5 % of the lowest; bounded otherwise', () => {
    expect(warmUpDone([840], 1)).toBeUndefined();
    // the falling trail h17h measured (total CPU per call, µs): still compiling at 2-4k calls
    expect(warmUpDone([840, 560], 2)).toBeUndefined();
    expect(warmUpDone([840, 560, 510], 3)).toBeUndefined();
    expect(warmUpDone([840, 560, 510, 430], 4)).toBeUndefined();
    expect(warmUpDone([840, 560, 510, 430, 420], 5)).toBe(true);
    // flat from the start: warm at the floor (4 chunks), not before
    expect(warmUpDone([500, 520, 510], 3)).toBeUndefined();
    expect(warmUpDone([500, 520, 510, 505], 4)).toBe(true);
    // one noisy rise is not warm (the old rule stopped here): a chunk 10 % over the lowest
    expect(warmUpDone([570, 360, 310, 330], 4)).toBeUndefined();
    expect(warmUpDone([650, 580, 510, 600], 4)).toBeUndefined();
    expect(warmUpDone([650, 580, 510, 600, 520, 515], 6)).toBe(true);
    const falling = Array.from({ length: WARMUP_MAX_CHUNKS }, (_, i) => 1000 * 0.8 ** i);
    expect(warmUpDone(falling.slice(0, -1), 1)).toBeUndefined();
    expect(warmUpDone(falling, 1)).toBe(false);
    expect(warmUpDone([1000, 800], WARMUP_MAX_S)).toBe(false);
    expect(fmtWarmUp({ calls: 4000, cpu_us_per_call: [500, 520, 510, 505], settled: true })).toContain('(floor)');
    expect(fmtWarmUp({ calls: 5000, cpu_us_per_call: [840, 560, 510, 430, 420], settled: true })).not.toMatch(/\(/);
    expect(fmtWarmUp({ calls: 10000, cpu_us_per_call: falling, settled: false })).toContain('(bound)');
  });

  it('sends chunks until the CPU reading settles, and says so', async () => {
    let cpu = 0;
    const costs = [900, 600, 450, 440];
    let chunk = 0;
    const send = async (amount: number) => {
      cpu += (costs[Math.min(chunk++, costs.length - 1)] * amount) / 1000;
      return { p50: 0, p99: 0, p999: 0, rps: 0, requests: amount, errors: 0 };
    };
    const w = await warmUp(send, () => cpu);
    expect(w).toEqual({ calls: 4 * WARMUP_CHUNK_CALLS, cpu_us_per_call: costs, settled: true });
    // unreadable CPU: the minimum, reported as not settled
    chunk = 0;
    const u = await warmUp(send, () => undefined);
    expect(u).toEqual({ calls: WARMUP_MIN_CHUNKS * WARMUP_CHUNK_CALLS, cpu_us_per_call: [], settled: false });
  });
});

describe.runIf(process.platform === 'linux')('bench overhead target processes', () => {
  let up: Child, bare: Child, gw: Child;
  beforeAll(async () => {
    up = await child(here('fake-upstream.ts'), ['0']);
    const upstream = up.line.trim();
    [bare, gw] = await Promise.all([
      child(here('overhead-proxies.ts'), [upstream, 'bare'], {}, bareProxyNodeArgs()),
      child(here('overhead-proxies.ts'), [upstream, 'ctxgate'], {}, proxiesNodeArgs()),
    ]);
    // three tsx processes starting on 2 busy cores: a lead's CI at load 20 took over 60 s here
  }, 180_000);
  afterAll(async () => {
    await Promise.all([bare?.stop(), gw?.stop()]);
    await up?.stop();
  });

  it('the bare proxy and ctxgate each have their own process, with the gateway Node flags', async () => {
    expect(bare.proc.pid).not.toBe(gw.proc.pid);
    for (const c of [bare, gw]) {
      const argv = readFileSync(`/proc/${c.proc.pid}/cmdline`, 'utf8').split('\0');
      expect(argv.slice(1, GATEWAY_NODE_FLAGS.length + 1)).toEqual([...GATEWAY_NODE_FLAGS]);
    }
    // Load on the bare proxy is served by its process: ctxgate's process answers none of it (a
    // count, not its CPU: an idle gateway's own CPU over the window, at /proc's 10 ms tick, was
    // near a quarter of the bare proxy's on a fast machine).
    const body = chatBody(1000, false);
    const b0 = processCpuMs(bare.proc.pid)!;
    const g0 = await answered(gw.line.trim());
    const r = await load({ url: bare.line.trim(), body, durationS: 1, amount: 400, connections: 4 });
    expect(r.requests).toBe(400);
    expect(r.errors).toBe(0);
    expect(processCpuMs(bare.proc.pid)! - b0).toBeGreaterThan(0);
    expect(await answered(gw.line.trim())).toBe(g0);
    // and ctxgate answers through its own URL (and the count sees it)
    const g = await load({ url: gw.line.trim(), body, durationS: 1, amount: 20, connections: 1 });
    expect(g.requests).toBe(20);
    expect(g.errors).toBe(0);
    expect(await answered(gw.line.trim())).toBe(g0 + 20);
    expect(JSON.parse(await gw.ask('gc'))).toHaveProperty('scavenges');
  }, 60_000);
});
