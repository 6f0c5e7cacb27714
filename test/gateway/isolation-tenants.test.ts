// Tenant isolation with the real context pipeline: two tenants, one guessed session id. Tenant B
// sending tenant A's session id (x-session-id) starts a new session of its own (the prefix
// header says new_session), cannot read A's break diagnostics or request records, and cannot
// overwrite A's request record by reusing A's request id.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256Hex } from '../../gateway/config/load.ts';
import { parseConfig } from '../../gateway/config/load.ts';
import type { Principal } from '../../gateway/auth.ts';
import { startGateway, type StartedGateway } from '../../gateway/server.ts';
import { startSimWorker, type SimWorker } from '../../loadtest/sim-worker/index.ts';
import { createPipeline } from '../../middleware/pipeline.ts';
import { registerBreakRoutes } from '../../middleware/routes/breaks.ts';
import { MemorySessionStore } from '../../middleware/session/memory-store.ts';

const KEY_A = 'sk-tenant-a';
const KEY_B = 'sk-tenant-b';
const SID = 'session-1234';
let worker: SimWorker;
let gw: StartedGateway;

beforeAll(async () => {
  worker = await startSimWorker({ model: 'm', tokenizer: 'qwen3' });
  const store = new MemorySessionStore(); // one store for both tenants, as in production
  const config = parseConfig({
    listen: { host: '127.0.0.1', port: 0 },
    health: { interval_ms: 0 },
    auth: {
      mode: 'keys',
      keys: [
        { key: `sha256:${sha256Hex(KEY_A)}`, tenant: 'a' },
        { key: `sha256:${sha256Hex(KEY_B)}`, tenant: 'b' },
      ],
    },
    models: [{ name: 'm', tokenizer: 'qwen3', layout: 'ctxgate', workers: [{ url: worker.url, id: 'w' }] }],
  });
  gw = await startGateway(config, {
    logger: false,
    pipelineFor: (m) => createPipeline({ model: m.name, tokenizer: 'qwen3', layout: 'ctxgate', store }),
    registerRoutes: (app) =>
      void registerBreakRoutes(app, { store, tenantOf: (req) => (req.principal as Principal | undefined)?.tenant }),
  });
});
afterAll(async () => {
  await gw?.close();
  await worker?.close();
});

const client = (key: string) =>
  new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: key, maxRetries: 0, defaultHeaders: { 'x-session-id': SID } });
type Msg = { role: 'system' | 'user' | 'assistant'; content: string };
const turn1: Msg[] = [
  { role: 'system' as const, content: 'You are a coding agent. '.repeat(20) },
  { role: 'user' as const, content: 'Fix the failing test in tokens.py' },
];
const turn2: Msg[] = [
  ...turn1,
  { role: 'assistant' as const, content: 'Reading the file.' },
  { role: 'user' as const, content: 'Go on.' },
];

async function call(key: string, messages: Msg[], requestId?: string) {
  const { response } = await client(key)
    .chat.completions.create(
      { model: 'm', max_tokens: 4, messages: messages as OpenAI.ChatCompletionMessageParam[] },
      requestId ? { headers: { 'x-request-id': requestId } } : undefined,
    )
    .withResponse();
  return {
    prefix: response.headers.get('x-ctxgate-prefix') ?? '',
    session: response.headers.get('x-ctxgate-session'),
    requestId: response.headers.get('x-request-id')!,
  };
}

async function get(path: string, key: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${gw.url}${path}`, { headers: { authorization: `Bearer ${key}` } });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe('two tenants, one guessed session id', () => {
  it("B's calls with A's session id start a new session and never see A's state", async () => {
    const a1 = await call(KEY_A, turn1);
    expect(a1.prefix).toContain('new_session');
    const a2 = await call(KEY_A, turn2, 'req-a-2');
    expect(a2.session).toBe(SID);
    expect(a2.prefix).not.toContain('new_session'); // A's session continues
    expect(Number(/cached=(\d+)/.exec(a2.prefix)?.[1])).toBeGreaterThan(0);

    // B guesses A's session id and replays A's exact conversation: still a brand-new session.
    const b1 = await call(KEY_B, turn2, 'req-a-2');
    expect(b1.prefix).toMatch(/cached=0; break=new_session/);

    // Break diagnostics: each tenant sees only its own session under the shared id.
    const ba = await get(`/v1/gateway/sessions/${SID}/breaks`, KEY_A);
    const bb = await get(`/v1/gateway/sessions/${SID}/breaks`, KEY_B);
    expect(ba.status).toBe(200);
    expect(bb.status).toBe(200);
    expect(ba.body.calls).toBe(2);
    expect(bb.body.calls).toBe(1);
    expect(await get(`/v1/gateway/sessions/only-a-has-this/breaks`, KEY_B)).toMatchObject({ status: 404 });

    // Request records: B reused A's request id; A's record is intact and B cannot read it.
    const ra = await get('/v1/gateway/requests/req-a-2', KEY_A);
    expect(ra.status).toBe(200);
    expect(ra.body.tenant).toBe('a');
    const rb = await get('/v1/gateway/requests/req-a-2', KEY_B);
    expect(rb.body.tenant).toBe('b'); // B sees its own record under that id, never A's
    const aOnly = await get(`/v1/gateway/requests/${a1.requestId}`, KEY_B);
    expect(aOnly.status).toBe(404);
    expect((aOnly.body.error as { code: string }).code).toBe('not_found');

    // A's session was not influenced by B: its next turn still continues from turn 2.
    const a3 = await call(KEY_A, [
      ...turn2,
      { role: 'assistant' as const, content: 'Done.' },
      { role: 'user' as const, content: 'Thanks.' },
    ]);
    expect(a3.prefix).not.toContain('new_session');
    expect((await get(`/v1/gateway/sessions/${SID}/breaks`, KEY_A)).body.calls).toBe(3);
  });

  it('rejects unauthenticated access to tenant-scoped routes', async () => {
    expect((await get(`/v1/gateway/sessions/${SID}/breaks`, 'sk-wrong')).status).toBe(401);
    expect((await get('/v1/gateway/requests/req-a-2', 'sk-wrong')).status).toBe(401);
  });
});
