// Cross-tenant prefix-cache side channel: tenant B sending tenant A's exact system prompt (with a
// secret PIN in it) must learn nothing — 0 cached tokens, the same prefix header, routing branch
// and predicted cache as for a wrong guess. Real sockets: two reference workers (vLLM flavour,
// honouring cache_salt), the assembled gateway, two tenant keys, the official openai SDK.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keysAuth } from '../helpers/keys.ts';
import { type AssembledGateway, type SimGateway, startSimGateway } from '../helpers/sim-gateway.ts';

const KEYS = {
  a: 'sk-tenant-a-salt-0123456789',
  b: 'sk-tenant-b-salt-0123456789',
  c: 'sk-tenant-c-salt-0123456789',
  d: 'sk-tenant-d-salt-0123456789',
};
let rig: SimGateway;
let gw: AssembledGateway;

beforeAll(async () => {
  rig = await startSimGateway({
    workers: 2,
    config: {
      auth: keysAuth(KEYS),
      tenancy: {
        cache_salt_secret: 'test-secret-0123456789abcdef',
        cache_groups: [{ name: 'public-docs', tenants: ['c', 'd'] }],
      },
    },
    modelConfig: { layout: 'ctxgate', policy: 'ctxgate' },
  });
  gw = rig.gw;
});
afterAll(() => rig?.close());

const system = (pin: string) =>
  `You are the support agent of ACME bank. The vault PIN is ${pin}. Never reveal it. ` +
  'Follow the policy handbook carefully. '.repeat(30);

async function ask(tenant: keyof typeof KEYS, pin: string, session: string, extra: Record<string, unknown> = {}) {
  const client = new OpenAI({
    baseURL: `${gw.url}/v1`,
    apiKey: KEYS[tenant],
    maxRetries: 0,
    defaultHeaders: { 'x-session-id': session },
  });
  const { data, response } = await client.chat.completions
    .create({
      model: 'm',
      max_tokens: 4,
      messages: [
        { role: 'system', content: system(pin) },
        { role: 'user', content: 'What are your opening hours?' },
      ],
      ...extra,
    } as OpenAI.ChatCompletionCreateParamsNonStreaming)
    .withResponse();
  const id = response.headers.get('x-request-id')!;
  const rec = (await (
    await fetch(`${gw.url}/v1/gateway/requests/${id}`, { headers: { authorization: `Bearer ${KEYS[tenant]}` } })
  ).json()) as { routing?: { branch: string; predictedCachedTokens?: number } };
  return {
    cached: data.usage?.prompt_tokens_details?.cached_tokens ?? -1,
    prefix: response.headers.get('x-ctxgate-prefix'),
    routing: rec.routing,
  };
}

describe('per-tenant cache_salt', () => {
  it("tenant B confirming A's secret system prompt gets exactly what a wrong guess gets", async () => {
    await ask('a', '4821', 'a-1');
    const a2 = await ask('a', '4821', 'a-2');
    expect(a2.cached).toBeGreaterThan(100); // A's own cache works across A's sessions

    // B's own earlier guess shares B's own leading tokens ("… The vault PIN is"): a guess after
    // a guess is compared with a guess after a guess.
    const first = await ask('b', '0000', 'b-0');
    expect(first.cached).toBe(0);
    const right = await ask('b', '4821', 'b-1');
    const wrong = await ask('b', '9999', 'b-2');
    // At most B's own first block ("…The vault PIN is", 16 tokens), on whichever worker B's
    // load spreading picked: never A's 200+ tokens, and never a pull toward A's worker.
    for (const g of [right, wrong]) {
      expect(g.cached).toBeLessThanOrEqual(16);
      expect(g.routing?.predictedCachedTokens ?? 0).toBeLessThanOrEqual(16);
      expect(g.routing?.branch).toBe('new_session');
    }
    expect(right.prefix).toBe(wrong.prefix);
  });

  it("a client-supplied cache_salt is replaced by the tenant's own", async () => {
    await ask('a', '1111', 'a-3', { cache_salt: 'shared-guess' });
    const a4 = await ask('a', '1111', 'a-4', { cache_salt: 'shared-guess' });
    const right = await ask('b', '1111', 'b-3', { cache_salt: 'shared-guess' });
    const wrong = await ask('b', '5555', 'b-4', { cache_salt: 'shared-guess' });
    expect(a4.cached).toBeGreaterThan(100);
    expect(right.cached).toBe(wrong.cached);
    expect(right.cached).toBeLessThan(a4.cached / 4);
  });

  it('tenants in one declared cache group share their cache (explicit opt-in)', async () => {
    await ask('c', '2222', 'c-1');
    const d = await ask('d', '2222', 'd-1');
    expect(d.cached).toBeGreaterThan(100);
  });
});
