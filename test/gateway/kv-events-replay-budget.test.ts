// A broken replay socket must not hold a worker's KV feed (and the gateway's event loop) forever:
// the reference publisher's flood() fault answers every replay request with an endless run of
// messages under one sequence number and never the end marker. Past the asked range the replay
// ends at the first message; with numbers before it, every message counts toward the replay's
// budget and the overrun is a failed replay (the worker's entry resynced, counted, logged).
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../gateway/config/load.ts';
import { WorkerKvFeed } from '../../gateway/kv-events/subscriber.ts';
import { createMetrics } from '../../gateway/metrics.ts';
import { Worker } from '../../gateway/upstream/worker.ts';
import { KvEventIndex } from '../../kvplanner/kv-events/event-index.ts';
import { encodeBatch } from '../../kvplanner/kv-events/wire.ts';
import { startPublisher } from '../helpers/kv-events.ts';

const open: Array<{ stop(): unknown }> = [];
// the gateway side (SUB, DEALER) closes before the publisher it reads, as a test that owns both should
afterEach(async () => {
  for (const o of open.splice(0).reverse()) await o.stop();
});

async function rig() {
  const pub = await startPublisher({ bufferSteps: 100 });
  open.push(pub);
  const config = parseConfig({
    listen: { host: '127.0.0.1', port: 0 },
    models: [{ name: 'm', tokenizer: 'qwen3', workers: [{ url: 'http://127.0.0.1:9', id: 'w0', kv_tokens: 1536 }] }],
  });
  const registry = new Registry();
  const metrics = createMetrics(registry);
  const worker = new Worker('m', config.models[0].workers[0], config.upstream, config.health, metrics);
  const warnings: string[] = [];
  const feed = new WorkerKvFeed(
    'm',
    worker,
    { endpoint: pub.endpoint, replay_endpoint: pub.replayEndpoint, topic: 'kv-events', stale_after_ms: 60_000 },
    new KvEventIndex(),
    16,
    metrics,
    { warn: (_o, msg) => warnings.push(msg), info: () => undefined },
  );
  open.push(feed);
  const count = async (re: RegExp) => Number(re.exec(await registry.metrics())?.[1] ?? 0);
  return { pub, feed, warnings, count };
}

const batch = encodeBatch(0, [{ type: 'AllBlocksCleared' }], 0);

/** Settles within `ms`, or says it did not (the unfixed replay never settles). */
const settles = (p: Promise<void>, ms = 25_000) =>
  Promise.race([p.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), ms).unref())]);

describe('KV event replay budget', () => {
  it('a replay answered with numbers past the gap ends at the first one (a failed replay, resynced)', async () => {
    const { pub, feed, warnings, count } = await rig();
    await feed.receive(0n, batch);
    pub.flood(1n << 40n);
    expect(await settles(feed.receive(5n, batch))).toBe(true);
    pub.endFlood();
    expect(await count(/ctxgate_kv_event_gaps_total\{[^}]*recovery="resync"\} (\d+)/)).toBe(1);
    expect(warnings).toContain('KV event gap the replay could not cover: worker index resynced');
    expect(feed.lastSeq).toBe(5n);
  }, 40_000);

  it('a replay answered endlessly with numbers before the gap overruns its budget: a failed replay', async () => {
    const { pub, feed, warnings, count } = await rig();
    await feed.receive(0n, batch);
    pub.flood(0n);
    expect(await settles(feed.receive(5n, batch))).toBe(true);
    pub.endFlood();
    expect(await count(/ctxgate_kv_event_batches_total\{[^}]*outcome="replay_overrun"\} (\d+)/)).toBe(1);
    expect(await count(/ctxgate_kv_event_gaps_total\{[^}]*recovery="resync"\} (\d+)/)).toBe(1);
    expect(warnings).toContain('KV event replay failed');
    expect(feed.lastSeq).toBe(5n);
  }, 40_000);
});
