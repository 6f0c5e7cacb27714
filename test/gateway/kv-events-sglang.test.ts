// SGLang-flavour KV events over real ZeroMQ sockets: the reference worker's SGLang flavour
// publishes as SGLang's radix cache does (page_size 1: one BlockStored per token, chained page
// hashes, the tenant's cache_salt on each page, one BlockRemoved per evicted node, AllBlocksCleared
// on /flush_cache, SGLang's msgpack batch); the gateway merges the pages into its 16-token blocks. Its entry must equal the blocks
// the worker's tree holds whole, routing must predict what the worker reports, evictions must
// reach the index, and a flush must empty it.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAssembledGateway } from '../../gateway/assemble.ts';
import { parseConfig } from '../../gateway/config/load.ts';
import type { KvEventIndex } from '../../kvplanner/kv-events/event-index.ts';
import { decodeBatch } from '../../kvplanner/kv-events/wire.ts';
import { startSimWorker, type SimWorker } from '../../loadtest/sim-worker/index.ts';
import { parseWorkerArgs } from '../../loadtest/sim-worker/options.ts';
import { localKvEvents } from '../helpers/kv-events.ts';
import { requestRecord } from '../helpers/request-record.ts';
import { until } from '../helpers/until.ts';

let worker: SimWorker;
let gw: Awaited<ReturnType<typeof startAssembledGateway>>;

beforeAll(async () => {
  // small KV (1,600 tokens) so that a few conversations evict
  worker = await startSimWorker({
    model: 'm',
    flavor: 'sglang',
    tokenizer: 'qwen3',
    kvTokens: 1600,
    kvEvents: localKvEvents({ topic: '' }),
  });
  const config = parseConfig({
    listen: { host: '127.0.0.1', port: 0 },
    health: { interval_ms: 0 },
    models: [
      {
        name: 'm',
        flavor: 'sglang',
        tokenizer: 'qwen3',
        policy: 'ctxgate',
        workers: [
          {
            url: worker.url,
            id: 'w0',
            kv_tokens: 1600,
            kv_events: {
              endpoint: worker.kvEvents!.endpoint,
              replay_endpoint: worker.kvEvents!.replayEndpoint,
              stale_after_ms: 30_000,
            },
          },
        ],
      },
    ],
  });
  gw = await startAssembledGateway(config, { logger: false, reporting: false });
});
afterAll(async () => {
  await gw?.close();
  await worker?.close();
});

const index = (): KvEventIndex => gw.ctx.fleet.get('m')!.kvIndex!;
const inStep = () => !index().guessed('w0') && index().index.size('w0') === worker.stats().cachedBlocks;

async function ask(session: string, turn: number) {
  const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'none', maxRetries: 0 });
  const messages: OpenAI.ChatCompletionMessageParam[] = [
    { role: 'system', content: `Session ${session}: you are a careful agent. `.repeat(12) },
  ];
  for (let t = 0; t <= turn; t++) messages.push({ role: 'user', content: `Turn ${t}: look at module_${t}.py please.` });
  const { data, response } = await client.chat.completions
    .create({ model: 'm', max_tokens: 4, messages })
    .withResponse();
  const id = response.headers.get('x-request-id')!;
  let routing: { predictedCachedTokens?: number } = {};
  routing = (await requestRecord<{ routing: typeof routing }>(gw.url, id)).routing;
  return { cached: data.usage?.prompt_tokens_details?.cached_tokens ?? 0, predicted: routing.predictedCachedTokens };
}

describe('SGLang-flavour KV events (page_size 1) into the gateway’s 16-token blocks', () => {
  it('--kv-events-config turns SGLang events on with publisher "zmq" (no enable flag, as SGLang)', () => {
    const json = '{"publisher":"zmq","endpoint":"tcp://*:5557"}';
    expect(parseWorkerArgs(['--flavor', 'sglang', '--kv-events-config', json]).opts.kvEvents?.endpoint).toBe(
      'tcp://*:5557',
    );
    // vLLM needs enable_kv_cache_events
    expect(parseWorkerArgs(['--kv-events-config', json]).opts.kvEvents).toBeUndefined();
  });

  it('publishes SGLang’s layout: one BlockStored per token with the request’s salt', async () => {
    const kv = worker.kvEvents!;
    const before = kv.counts.batches;
    // fixed text: the prompt (its length, the pages stored) is the same every run; the worker is fresh
    await ask('layout-0', 0);
    await until(() => kv.counts.batches > before);
    // the replay buffer holds exactly what went out
    const { Dealer } = await import('zeromq');
    const d = new Dealer({ linger: 0, receiveTimeout: 5000 });
    d.connect(kv.replayEndpoint!);
    const seq = Buffer.alloc(8);
    seq.writeBigInt64BE(BigInt(before));
    await d.send([Buffer.alloc(0), seq]);
    const [, , payload] = await d.receive();
    d.close();
    const batch = decodeBatch(payload);
    const stored = batch.events.filter((e) => e.type === 'BlockStored');
    expect(stored.length).toBeGreaterThan(100);
    for (const e of stored) {
      expect(
        e.type === 'BlockStored' && e.blockHashes.length === 1 && e.tokenIds.length === 1 && e.blockSize === 1,
      ).toBe(true);
    }
    // chained: each page names the one before it
    for (let i = 1; i < stored.length; i++)
      if (stored[i].type === 'BlockStored' && stored[i - 1].type === 'BlockStored')
        expect((stored[i] as { parentBlockHash: string }).parentBlockHash).toBe(
          (stored[i - 1] as { blockHashes: string[] }).blockHashes[0],
        );
  });

  it('the index equals the blocks the tree holds whole; routing predicts what the worker reports', async () => {
    await ask('s1', 0);
    await until(inStep);
    expect(index().index.size('w0')).toBeGreaterThan(0);
    const second = await ask('s1', 1);
    expect(second.cached).toBeGreaterThan(100);
    expect(Math.abs((second.predicted ?? -1) - second.cached)).toBeLessThanOrEqual(16);
    // more conversations than 1,600 tokens hold: the tree evicts leaves, the index follows
    for (let s = 2; s < 10; s++) await ask(`s${s}`, 2);
    await until(inStep);
    expect(worker.stats().evictions).toBeGreaterThan(0);
    expect(index().removed).toBeGreaterThan(0);
  });

  it('/flush_cache empties the tree: AllBlocksCleared empties the entry', async () => {
    expect(index().index.size('w0')).toBeGreaterThan(0);
    const res = await fetch(`${worker.url}/flush_cache`, { method: 'POST' });
    expect(res.status).toBe(200);
    await until(() => index().index.size('w0') === 0);
    expect(worker.stats().cachedBlocks).toBe(0);
  });
});
