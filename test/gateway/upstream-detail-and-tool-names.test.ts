// Two exposure and ambiguity checks over real sockets, with two tenants:
// - a worker's FastAPI/pydantic 422 (`detail: [{loc, msg, input, ctx, url}]`, where `input` echoes
//   the body the worker got, the tenant's cache_salt included) reaches the client as `loc: msg`
//   only;
// - two tools of one name are refused up front (400 naming the field) in every ingress API, before
//   the layout could learn one tool's lines by the other's.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { startAssembledGateway } from '../../gateway/assemble.ts';
import { parseConfig } from '../../gateway/config/load.ts';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.ts';
import { keysAuth } from '../helpers/keys.ts';

const KEYS = { a: 'sk-detail-tenant-a-0123456789', b: 'sk-detail-tenant-b-0123456789' };

/** A worker that rejects every completion as FastAPI does, echoing the body it got. */
async function startValidatingWorker(): Promise<{ url: string; close: () => Promise<void> }> {
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const input = body ? JSON.parse(body) : {};
      res.writeHead(422, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          detail: [
            {
              type: 'missing',
              loc: ['body', 'messages', 0, 'name'],
              msg: 'Field required',
              input,
              ctx: { internal: '/opt/vllm/entrypoints/openai/protocol.py' },
              url: 'https://errors.pydantic.dev/2.9/v/missing',
            },
          ],
        }),
      );
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, close: () => new Promise((r) => server.close(() => r())) };
}

function config(url: string) {
  return parseConfig({
    listen: { host: '127.0.0.1', port: 0 },
    auth: keysAuth(KEYS),
    tenancy: { cache_salt_secret: 'detail-test-secret-0123456789' },
    health: { interval_ms: 0 },
    models: [{ name: 'm', tokenizer: 'qwen3', layout: 'ctxgate', workers: [{ url, id: 'w' }] }],
  });
}

describe('upstream validation details and tool names', () => {
  let gw: Awaited<ReturnType<typeof startAssembledGateway>> | undefined;
  let closeWorker: (() => Promise<void>) | undefined;
  let up: FakeUpstream | undefined;
  afterEach(async () => {
    await gw?.close();
    await closeWorker?.();
    await up?.close();
    gw = undefined;
    closeWorker = undefined;
    up = undefined;
  });

  it("a worker's 422 reaches the client as loc and message, without the echoed body or internals", async () => {
    const w = await startValidatingWorker();
    closeWorker = w.close;
    gw = await startAssembledGateway(config(w.url), { logger: false, reporting: false });
    const secret = 'tenant-a-private-prompt-7f3a';
    for (const key of [KEYS.a, KEYS.b]) {
      const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: key, maxRetries: 0 });
      const err = await client.chat.completions
        .create({ model: 'm', max_tokens: 4, messages: [{ role: 'user', content: `hello ${secret}` }] })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(OpenAI.APIError);
      const e = err as InstanceType<typeof OpenAI.APIError>;
      expect(e.status).toBe(422);
      expect(e.message).toContain('body.messages.0.name: Field required');
      const raw = JSON.stringify(e.error);
      for (const leaked of [secret, 'cache_salt', 'protocol.py', 'pydantic.dev']) expect(raw).not.toContain(leaked);
    }
  }, 120_000);

  it('two tools of one name are refused with a 400 naming the field (chat, Responses and messages APIs, each in its own field names)', async () => {
    up = await startFakeUpstream({ name: 'w', record: true });
    gw = await startAssembledGateway(config(up.url), { logger: false, reporting: false });
    const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: KEYS.a, maxRetries: 0 });
    const fn = (description: string) => ({
      type: 'function' as const,
      function: { name: 'bash', description, parameters: { type: 'object', properties: {} } },
    });
    const e1 = (await openai.chat.completions
      .create({ model: 'm', max_tokens: 4, messages: [{ role: 'user', content: 'hi' }], tools: [fn('one'), fn('two')] })
      .catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
    expect(e1.status).toBe(400);
    expect(JSON.stringify(e1.error)).toContain('tools[1].function.name');
    const anthropic = new Anthropic({ baseURL: gw.url, apiKey: KEYS.b, maxRetries: 0 });
    const tool = (description: string) => ({ name: 'bash', description, input_schema: { type: 'object' as const } });
    // a server tool first: the caller's indexes and field, not those of the translated chat request
    const server = { type: 'web_search_20250305' as const, name: 'web_search' as const };
    const e2 = (await anthropic.messages
      .create({
        model: 'm',
        max_tokens: 4,
        messages: [{ role: 'user', content: 'hi' }],
        tools: [server, tool('a'), tool('b')],
      })
      .catch((e: unknown) => e)) as InstanceType<typeof Anthropic.APIError>;
    expect(e2.status).toBe(400);
    expect(JSON.stringify(e2.error)).toContain("tools[2].name 'bash' is already the name of tools[1]");
    expect(JSON.stringify(e2.error)).not.toContain('function.name');
    // Responses: a hosted tool first, then two functions of one name
    const e3 = (await openai.responses
      .create({
        model: 'm',
        input: 'hi',
        tools: [
          { type: 'web_search' },
          { type: 'function', name: 'bash', parameters: {}, strict: false },
          { type: 'function', name: 'bash', parameters: {}, strict: false },
        ],
      })
      .catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
    expect(e3.status).toBe(400);
    expect(e3.param).toBe('tools[2].name');
    expect(e3.message).toContain("tools[2].name 'bash' is already the name of tools[1]");
    // Distinct names still pass, and nothing refused reached the worker.
    const ok = await openai.chat.completions.create({
      model: 'm',
      max_tokens: 4,
      messages: [{ role: 'user', content: 'hi' }],
      tools: [fn('one'), { ...fn('two'), function: { ...fn('two').function, name: 'sh' } }],
    });
    expect(ok.choices.length).toBe(1);
    expect(up.requests.length).toBe(1);
  }, 120_000);
});
