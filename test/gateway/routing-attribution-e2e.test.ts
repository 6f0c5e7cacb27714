// Routing attribution over real sockets: two reference workers (vLLM flavour), the assembled
// gateway (policy ctxgate), the official openai SDK. Each request record carries the cached tokens
// the policy predicted on the chosen worker next to what that worker reported, the same pair feeds
// ctxgate_routing_cached_tokens_total, and a session whose prompt changes within its first KV block
// is flagged (record + ctxgate_sub_block_prefix_total): its 0 % hit is the prompt's, not routing's.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestRecord } from '../helpers/request-record.ts';
import { type AssembledGateway, type SimGateway, startSimGateway } from '../helpers/sim-gateway.ts';

let rig: SimGateway;
let gw: AssembledGateway;

beforeAll(async () => {
  rig = await startSimGateway({ workers: 2, modelConfig: { layout: 'passthrough', policy: 'ctxgate' } });
  gw = rig.gw;
});
afterAll(() => rig?.close());

interface Routing {
  branch: string;
  predictedCachedTokens?: number;
  reportedCachedTokens?: number;
  subBlockPrefix?: boolean;
}

async function ask(session: string, system: string, user: string): Promise<{ cached: number; routing: Routing }> {
  const client = new OpenAI({
    baseURL: `${gw.url}/v1`,
    apiKey: 'none',
    maxRetries: 0,
    defaultHeaders: { 'x-session-id': session },
  });
  const { data, response } = await client.chat.completions
    .create({
      model: 'm',
      max_tokens: 4,
      messages: [
        { role: 'system', content: system },
        { role: 'user', content: user },
      ],
    })
    .withResponse();
  const id = response.headers.get('x-request-id')!;
  return {
    cached: data.usage?.prompt_tokens_details?.cached_tokens ?? -1,
    routing: (await requestRecord<{ routing: Routing }>(gw.url, id)).routing,
  };
}

const metric = async (re: RegExp): Promise<number> =>
  Number(re.exec(await (await fetch(`${gw.url}/metrics`)).text())?.[1] ?? 0);

describe('routing attribution', () => {
  const handbook = 'Follow the repository rules and explain every change you make. '.repeat(20);

  it('records predicted next to reported cached tokens, and counts both', async () => {
    const first = await ask('s-stable', handbook, 'List the files.');
    expect(first.routing.predictedCachedTokens).toBe(0);
    expect(first.routing.reportedCachedTokens).toBe(0);
    expect(first.routing.subBlockPrefix).toBe(false); // a first call has nothing to reuse yet
    const second = await ask('s-stable', handbook, 'List the files.');
    expect(second.routing.branch).toBe('sticky');
    expect(second.routing.reportedCachedTokens).toBe(second.cached);
    expect(second.cached).toBeGreaterThan(150);
    // the prediction is the index's view: within one block of what the worker holds
    expect(Math.abs(second.routing.predictedCachedTokens! - second.cached)).toBeLessThanOrEqual(64);
    const predicted = await metric(
      /^ctxgate_routing_cached_tokens_total\{model="m",policy="ctxgate",source="predicted"\} (\d+)/m,
    );
    const reported = await metric(
      /^ctxgate_routing_cached_tokens_total\{model="m",policy="ctxgate",source="reported"\} (\d+)/m,
    );
    expect(reported).toBe(second.cached);
    expect(predicted).toBe(second.routing.predictedCachedTokens);
  });

  it('flags a session whose prompt changes inside its first KV block', async () => {
    const before = await metric(/^ctxgate_sub_block_prefix_total\{model="m"\} (\d+)/m);
    await ask('s-clock', `Now: 10:00:01. ${handbook}`, 'Status?');
    const second = await ask('s-clock', `Now: 10:00:07. ${handbook}`, 'Status?');
    expect(second.cached).toBe(0);
    expect(second.routing.subBlockPrefix).toBe(true);
    expect(await metric(/^ctxgate_sub_block_prefix_total\{model="m"\} (\d+)/m)).toBe(before + 1);
    // the same session with a stable top is not flagged
    const third = await ask('s-clock', `Now: 10:00:07. ${handbook}`, 'Status?');
    expect(third.routing.subBlockPrefix).toBe(false);
    expect(third.cached).toBeGreaterThan(0);
  });
});
