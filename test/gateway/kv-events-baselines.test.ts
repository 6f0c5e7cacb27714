// The baselines in `serve` read the engines' KV events too: reference workers (vLLM flavour)
// publish over real ZeroMQ sockets, the assembled gateway subscribes, and smg_cache_aware,
// dynamo_kv and llmd_precise route on the precise index (each worker's entry equals its cache,
// block for block) with the predicted cached tokens within one block of what the worker reports.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAssembledGateway } from '../../gateway/assemble.ts';
import { parseConfig } from '../../gateway/config/load.ts';
import type { KvEventIndex } from '../../kvplanner/kv-events/event-index.ts';
import { startSimWorker, type SimWorker } from '../../loadtest/sim-worker/index.ts';
import { localKvEvents } from '../helpers/kv-events.ts';
import { requestRecord } from '../helpers/request-record.ts';
import { until } from '../helpers/until.ts';

const POLICIES = ['smg_cache_aware', 'dynamo_kv', 'llmd_precise'] as const;
const workers = new Map<string, SimWorker[]>();
let gw: Awaited<ReturnType<typeof startAssembledGateway>>;

beforeAll(async () => {
  const models = [];
  for (const policy of POLICIES) {
    const pair = await Promise.all(
      [0, 1].map(() =>
        startSimWorker({
          model: policy,
          tokenizer: 'qwen3',
          kvEvents: localKvEvents({ topic: 'kv' }),
        }),
      ),
    );
    workers.set(policy, pair);
    models.push({
      name: policy,
      tokenizer: 'qwen3',
      policy,
      workers: pair.map((w, i) => ({
        url: w.url,
        id: `w${i}`,
        // long: a loaded machine must not fall back by accident
        kv_events: {
          endpoint: w.kvEvents!.endpoint,
          replay_endpoint: w.kvEvents!.replayEndpoint,
          topic: 'kv',
          stale_after_ms: 30_000,
        },
      })),
    });
  }
  gw = await startAssembledGateway(
    parseConfig({ listen: { host: '127.0.0.1', port: 0 }, health: { interval_ms: 0 }, models }),
    {
      logger: false,
      reporting: false,
    },
  );
});
afterAll(async () => {
  await gw?.close();
  await Promise.all([...workers.values()].flat().map((w) => w.close()));
});

const index = (model: string): KvEventIndex => gw.ctx.fleet.get(model)!.kvIndex!;

async function ask(model: string, session: string, turn: number) {
  const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'none', maxRetries: 0 });
  const messages: OpenAI.ChatCompletionMessageParam[] = [
    { role: 'system', content: `Conversation ${session}: you are a careful agent. `.repeat(12) },
  ];
  for (let t = 0; t <= turn; t++) messages.push({ role: 'user', content: `Turn ${t}: look at module_${t}.py please.` });
  const { data, response } = await client.chat.completions.create({ model, max_tokens: 4, messages }).withResponse();
  const id = response.headers.get('x-request-id')!;
  let routing: { predictedCachedTokens?: number } = {};
  routing = (await requestRecord<{ routing: typeof routing }>(gw.url, id)).routing;
  return {
    worker: response.headers.get('x-ctxgate-worker'),
    cached: data.usage?.prompt_tokens_details?.cached_tokens ?? 0,
    predicted: routing.predictedCachedTokens,
  };
}

describe('baseline policies on the precise index (KV events over ZeroMQ)', () => {
  it.each(POLICIES)('%s: entries equal the workers’ caches; the next turn goes where its prefix is', async (policy) => {
    const idx = index(policy);
    const pair = workers.get(policy)!;
    const inStep = () =>
      pair.every((w, i) => !idx.guessed(`w${i}`) && idx.index.size(`w${i}`) === w.stats().cachedBlocks);
    const first = await ask(policy, 'a', 0);
    await until(() => inStep() && idx.index.size(first.worker!) > 0);
    // the policy never wrote the index itself: the other worker's entry is empty
    expect(idx.index.size(first.worker === 'w0' ? 'w1' : 'w0')).toBe(0);
    const second = await ask(policy, 'a', 1);
    expect(second.worker).toBe(first.worker);
    expect(second.cached).toBeGreaterThan(100);
    expect(Math.abs((second.predicted ?? -1) - second.cached)).toBeLessThanOrEqual(16);
    await until(inStep);
  });
});
