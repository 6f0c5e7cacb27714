// Engine KV events over real ZeroMQ sockets: reference workers (vLLM flavour) publish BlockStored /
// BlockRemoved / AllBlocksCleared as vLLM does (PUB + ROUTER replay, msgpack batches); the assembled
// gateway subscribes per worker (`workers[].kv_events`) and routes on what each cache holds. The
// gateway's index for a worker must equal the worker's own cache block for block (stores and
// evictions), a dropped batch must come back through the replay socket, a publisher that stops must
// put its worker on the approximate index (metric, warn log) and its return must make it precise
// again, and a cache reset must empty the worker's entry.
import { randomUUID } from 'node:crypto';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAssembledGateway } from '../../gateway/assemble.ts';
import { parseConfig } from '../../gateway/config/load.ts';
import type { KvEventIndex } from '../../kvplanner/kv-events/event-index.ts';
import { startSimWorker, type SimWorker } from '../../loadtest/sim-worker/index.ts';
import { localKvEvents, startPublisher } from '../helpers/kv-events.ts';
import { requestRecord } from '../helpers/request-record.ts';
import { until } from '../helpers/until.ts';

// long enough that a loaded test machine does not fall back by accident (the tests wait it out once)
const STALE_MS = 1500;
let evented: SimWorker;
let plain: SimWorker;
let gw: Awaited<ReturnType<typeof startAssembledGateway>>;
const lines: Array<{ level: number; msg: string; worker?: string; reason?: string }> = [];

beforeAll(async () => {
  // small KV (96 blocks) so that a few conversations evict
  evented = await startSimWorker({ model: 'm', tokenizer: 'qwen3', kvTokens: 1536, kvEvents: localKvEvents() });
  plain = await startSimWorker({ model: 'mix', tokenizer: 'qwen3' });
  const mixed = await startSimWorker({ model: 'mix', tokenizer: 'qwen3', kvEvents: localKvEvents() });
  const events = (w: SimWorker) => ({
    endpoint: w.kvEvents!.endpoint,
    replay_endpoint: w.kvEvents!.replayEndpoint,
    topic: 'kv-events',
    stale_after_ms: STALE_MS,
  });
  const config = parseConfig({
    listen: { host: '127.0.0.1', port: 0 },
    health: { interval_ms: 0 },
    models: [
      {
        name: 'm',
        tokenizer: 'qwen3',
        policy: 'ctxgate',
        workers: [{ url: evented.url, id: 'w0', kv_tokens: 1536, kv_events: events(evented) }],
      },
      {
        name: 'mix',
        tokenizer: 'qwen3',
        policy: 'ctxgate',
        workers: [
          { url: mixed.url, id: 'a', kv_events: events(mixed) },
          { url: plain.url, id: 'b' },
        ],
      },
    ],
  });
  gw = await startAssembledGateway(config, {
    logger: { level: 'info', stream: { write: (s: string) => lines.push(JSON.parse(s)) } } as never,
    reporting: false,
  });
  extra.push(mixed);
});
const extra: SimWorker[] = [];
afterAll(async () => {
  await gw?.close();
  await Promise.all([evented, plain, ...extra].map((w) => w?.close()));
});

const index = (model: string): KvEventIndex => gw.ctx.fleet.get(model)!.kvIndex!;
const metric = async (re: RegExp): Promise<number> =>
  Number(re.exec(await (await fetch(`${gw.url}/metrics`)).text())?.[1] ?? 0);

/** One call of a growing conversation; returns what the worker reported and the routing record. */
async function ask(model: string, session: string, turn: number, maxTokens = 4) {
  const client = new OpenAI({
    baseURL: `${gw.url}/v1`,
    apiKey: 'none',
    maxRetries: 0,
    defaultHeaders: { 'x-session-id': session },
  });
  const messages: OpenAI.ChatCompletionMessageParam[] = [
    { role: 'system', content: `Session ${session}: you are a careful agent. `.repeat(12) },
  ];
  for (let t = 0; t <= turn; t++) messages.push({ role: 'user', content: `Turn ${t}: look at module_${t}.py please.` });
  const { data, response } = await client.chat.completions
    .create({ model, max_tokens: maxTokens, messages })
    .withResponse();
  const id = response.headers.get('x-request-id')!;
  let routing: { predictedCachedTokens?: number; branch?: string } = {};
  routing = (await requestRecord<{ routing: typeof routing }>(gw.url, id)).routing;
  return {
    worker: response.headers.get('x-ctxgate-worker'),
    cached: data.usage?.prompt_tokens_details?.cached_tokens ?? 0,
    routing,
  };
}

/** The gateway's entry for w0 holds exactly the blocks the worker's cache holds. */
const inStep = () => index('m').index.size('w0') === evented.stats().cachedBlocks;

describe('KV events over ZeroMQ', () => {
  it('stores and evictions reach the index; routing predicts what the worker reports', async () => {
    await ask('m', 's1', 0);
    await until(() => !index('m').guessed('w0') && inStep());
    expect(index('m').index.size('w0')).toBeGreaterThan(0);
    const second = await ask('m', 's1', 1);
    expect(second.cached).toBeGreaterThan(100);
    // the precise index says what the engine will serve, to within the recomputed last block
    expect(Math.abs((second.routing.predictedCachedTokens ?? -1) - second.cached)).toBeLessThanOrEqual(16);
    // more conversations than 96 blocks hold: the engine evicts, the index follows
    for (let s = 2; s < 14; s++) await ask('m', `s${s}`, 2);
    await until(inStep);
    expect(evented.stats().evictions).toBeGreaterThan(0);
    expect(index('m').removed).toBeGreaterThan(0);
  });

  it('a dropped batch is recovered through the replay socket', async () => {
    const before = await metric(/^ctxgate_kv_event_gaps_total\{model="m",worker="w0",recovery="replay"\} (\d+)/m);
    evented.kvEvents!.dropNext(1);
    await ask('m', `drop-${randomUUID()}`, 0); // its batch never reaches the SUB socket
    await ask('m', `drop-${randomUUID()}`, 0); // the next one shows the gap
    await until(inStep);
    expect(evented.kvEvents!.counts.dropped).toBe(1);
    // the index can be in step before the gap is counted (the second batch may arrive after it)
    const gaps = /^ctxgate_kv_event_gaps_total\{model="m",worker="w0",recovery="replay"\} (\d+)/m;
    await until(async () => (await metric(gaps)) >= before + 1);
    expect(await metric(gaps)).toBe(before + 1);
    await until(inStep);
    expect(index('m').guessed('w0')).toBe(false);
  });

  it('a request that stores no block (all cached) is no silence: the replay socket answers, no fallback', async () => {
    const silent = /^ctxgate_kv_event_fallbacks_total\{model="m",worker="w0",reason="silent"\} (\d+)/m;
    const before = await metric(silent);
    // an empty cache (nothing to evict) and one output token (nothing generated is cached): the
    // repeated call below stores and evicts nothing
    expect((await fetch(`${evented.url}/reset_prefix_cache`, { method: 'POST' })).status).toBe(200);
    // a fixed name, not a random one: whether the prompt ends on a block boundary (its last block is
    // then recomputed and stored again) must not depend on how a random id tokenises
    const s = 'repeat-a';
    await ask('m', s, 0, 1);
    await until(() => inStep() && index('m').index.size('w0') > 0);
    const batches = evented.kvEvents!.counts.batches;
    const replays = evented.kvEvents!.counts.replays;
    // the same call again: every block is cached, the engine publishes nothing
    const again = await ask('m', s, 0, 1);
    expect(again.worker).toBe('w0');
    expect(evented.kvEvents!.counts.batches).toBe(batches);
    // past stale_after_ms the gateway asks the replay socket instead of falling back
    await until(() => evented.kvEvents!.counts.replays > replays);
    await new Promise((r) => setTimeout(r, 200));
    expect(index('m').guessed('w0')).toBe(false);
    expect(await metric(silent)).toBe(before);
  });

  it('a silent publisher (replay unanswered too) falls back to the approximate index and recovers', async () => {
    const silent = /^ctxgate_kv_event_fallbacks_total\{model="m",worker="w0",reason="silent"\} (\d+)/m;
    const before = await metric(silent);
    evented.kvEvents!.freeze();
    const s = `silent-${randomUUID()}`;
    await ask('m', s, 0);
    await until(() => index('m').guessed('w0'));
    expect(await metric(silent)).toBe(before + 1);
    expect(await metric(/^ctxgate_kv_index_precise\{model="m",worker="w0"\} (\d+)/m)).toBe(0);
    expect(lines.some((l) => l.level === 40 && l.worker === 'w0' && /KV events stopped/.test(l.msg))).toBe(true);
    // meanwhile routing guesses: the policy records its own pick in w0's entry again
    const guessed = await ask('m', s, 1);
    expect(guessed.routing.branch).toBe('sticky');
    evented.kvEvents!.thaw();
    await ask('m', s, 2);
    await until(() => !index('m').guessed('w0') && inStep());
    expect(await metric(/^ctxgate_kv_index_precise\{model="m",worker="w0"\} (\d+)/m)).toBe(1);
  });

  it('a dead publisher (sockets closed) falls back at once; its return replays what it missed', async () => {
    const disconnected = /^ctxgate_kv_event_fallbacks_total\{model="m",worker="w0",reason="disconnected"\} (\d+)/m;
    const before = await metric(disconnected);
    await evented.kvEvents!.stop();
    await until(() => index('m').guessed('w0'));
    expect(await metric(disconnected)).toBe(before + 1);
    const s = `dead-${randomUUID()}`;
    await ask('m', s, 0); // cached while nobody hears about it
    await evented.kvEvents!.start();
    await ask('m', s, 1);
    await until(() => !index('m').guessed('w0') && inStep());
  });

  it('a gateway started after the engine learns its whole cache from the replay buffer', async () => {
    await ask('m', `join-${randomUUID()}`, 0);
    const config = parseConfig({
      listen: { host: '127.0.0.1', port: 0 },
      health: { interval_ms: 0 },
      models: [
        {
          name: 'm',
          tokenizer: 'qwen3',
          policy: 'ctxgate',
          workers: [
            {
              url: evented.url,
              id: 'w0',
              kv_events: { endpoint: evented.kvEvents!.endpoint, replay_endpoint: evented.kvEvents!.replayEndpoint },
            },
          ],
        },
      ],
    });
    const late = await startAssembledGateway(config, { logger: false, reporting: false });
    try {
      const idx = late.ctx.fleet.get('m')!.kvIndex!;
      // no request through it: the (re)connect catch-up alone brings the index in step
      await until(() => !idx.guessed('w0') && idx.index.size('w0') === evented.stats().cachedBlocks);
      expect(idx.index.size('w0')).toBeGreaterThan(0);
    } finally {
      await late.close();
    }
  });

  it('an engine restarted on the same address (counting from 0 again) replaces the worker’s entry', async () => {
    const first = await startPublisher({ bufferSteps: 100 });
    const config = parseConfig({
      listen: { host: '127.0.0.1', port: 0 },
      health: { interval_ms: 0 },
      models: [
        {
          name: 'm',
          tokenizer: 'qwen3',
          policy: 'ctxgate',
          workers: [
            {
              url: plain.url,
              id: 'r0',
              kv_events: { endpoint: first.endpoint, replay_endpoint: first.replayEndpoint, topic: 'kv-events' },
            },
          ],
        },
      ],
    });
    const g = await startAssembledGateway(config, { logger: false, reporting: false });
    const idx = g.ctx.fleet.get('m')!.kvIndex!;
    const tokens = (n: number) => Array.from({ length: 16 }, (_, i) => n * 16 + i);
    try {
      await until(() => !idx.guessed('r0')); // joined (an empty replay is in step)
      for (let i = 0; i < 3; i++) {
        first.stored(`${i + 1}.1.16`, i ? `${i}.1.16` : undefined, tokens(i), undefined);
        await until(() => idx.index.size('r0') === i + 1);
      }
      await first.stop();
      // the new process: same addresses, seq from 0, an empty cache that then stores one block
      const second = await startPublisher({ endpoint: first.endpoint, replayEndpoint: first.replayEndpoint });
      try {
        second.stored('9.9.16', undefined, tokens(9), undefined);
        await until(() => !idx.guessed('r0') && idx.index.size('r0') === 1);
        const gaps = await (await fetch(`${g.url}/metrics`)).text();
        expect(gaps).toMatch(/^ctxgate_kv_event_gaps_total\{model="m",worker="r0",recovery="resync"\} 1$/m);
      } finally {
        await second.stop();
      }
    } finally {
      await g.close();
    }
  });

  it('a cache reset (AllBlocksCleared) empties the worker’s entry', async () => {
    expect(index('m').index.size('w0')).toBeGreaterThan(0);
    const res = await fetch(`${evented.url}/reset_prefix_cache`, { method: 'POST' });
    expect(res.status).toBe(200);
    await until(() => index('m').index.size('w0') === 0);
    expect(evented.stats().cachedBlocks).toBe(0);
  });

  it('a worker without events is guessed, one with events is precise, in one model', async () => {
    await ask('mix', 'x1', 0);
    await ask('mix', 'x2', 0);
    const mix = index('mix');
    expect(mix.guessed('b')).toBe(true);
    // a is precise once its stream is in step; the batch with its blocks can come after it joined
    await until(() => !mix.guessed('a') && mix.index.size('a') === extra[0].stats().cachedBlocks);
    // both got a conversation: b's entry is the policy's guess, a's is the engine's word
    expect(mix.index.size('b')).toBeGreaterThan(0);
    expect(mix.index.size('a')).toBe(extra[0].stats().cachedBlocks);
  });
});
