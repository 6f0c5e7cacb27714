// The gateway's /metrics carries the process's GC pauses by kind and its heap spaces' sizes
// (prom-client's default series under the ctxgate_process_ prefix, gateway/metrics.ts), which the
// README's metrics table names for the one-connection p99 question: how often the gateway
// scavenges and marks, and how large V8 let the young generation grow (its capacity moves between
// the flags' bounds, and back down after idle time). A gateway built without its default metrics
// (a registry passed in, as a test harness does) serves none of them.
import { PerformanceObserver, constants } from 'node:perf_hooks';
import { Registry } from 'prom-client';
import { afterAll, describe, expect, it } from 'vitest';
import { startRig, until, type TestRig } from '../helpers/gateway.ts';

const rigs: TestRig[] = [];
afterAll(async () => {
  await Promise.all(rigs.map((r) => r.close()));
});

/** Allocates short-lived objects until this process has run at least one scavenge. */
async function scavengeOnce(): Promise<void> {
  let seen = false;
  const obs = new PerformanceObserver((list) => {
    for (const e of list.getEntries())
      if ((e as { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MINOR) seen = true;
  });
  obs.observe({ entryTypes: ['gc'] });
  try {
    let keep: object[] = [];
    // a bound, not a timing: 64 rounds of 100k small objects fill any young generation many times over
    for (let round = 0; round < 64 && !seen; round++) {
      for (let i = 0; i < 100_000; i++) keep.push({ i, s: `x${i}` });
      keep = [];
      // the observer's entries arrive on a later turn of the event loop
      await new Promise((r) => setImmediate(r));
    }
  } finally {
    obs.disconnect();
  }
  expect(seen).toBe(true);
}

const scrape = async (rig: TestRig): Promise<string> => (await fetch(`${rig.gw.url}/metrics`)).text();

describe('/metrics: GC pauses and heap spaces', () => {
  it('serves the GC pause histogram by kind and the young generation size', async () => {
    const rig = await startRig({ upstreams: [{ name: 'a' }] });
    rigs.push(rig);
    await rig.client().chat.completions.create({ model: 'm1', messages: [{ role: 'user', content: 'hi' }] });
    await scavengeOnce();
    // prom-client's own observer counts the same pauses (also on a later turn)
    let text = '';
    await until(async () => {
      text = await scrape(rig);
      return /ctxgate_process_nodejs_gc_duration_seconds_count\{kind="minor"\} [1-9]/.test(text);
    });
    expect(text).toMatch(/# TYPE ctxgate_process_nodejs_gc_duration_seconds histogram/);
    const young = /ctxgate_process_nodejs_heap_space_size_total_bytes\{space="new"\} (\d+)/.exec(text);
    expect(young).not.toBeNull();
    expect(Number(young![1])).toBeGreaterThan(0);
    expect(text).toMatch(/ctxgate_process_nodejs_eventloop_lag_p99_seconds \d/);
  });

  it('a gateway given its registry (a harness) serves none of them', async () => {
    const rig = await startRig({ upstreams: [{ name: 'a' }], deps: { registry: new Registry() } });
    rigs.push(rig);
    const text = await scrape(rig);
    expect(text).toMatch(/ctxgate_requests_total|# TYPE ctxgate_/);
    expect(text).not.toMatch(/ctxgate_process_/);
  });
});
