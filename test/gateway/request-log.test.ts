// The gateway's request log over real sockets (a reference worker behind the gateway, the official
// openai client): one line per request at info ("request completed": method, redacted URL, status,
// response time, request id), "incoming request" only at debug, and no key in any line, neither the
// bearer key nor one in the URL's query.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../gateway/config/load.ts';
import { startGateway, type StartedGateway } from '../../gateway/server.ts';
import { startSimWorker, type SimWorker } from '../../loadtest/sim-worker/index.ts';

const SECRET = 'sk-live-hloader0123456789abcdefSECRET';
let sim: SimWorker;

beforeAll(async () => {
  sim = await startSimWorker({ model: 'm', seed: 1, timeScale: 0 });
});
afterAll(async () => {
  await sim?.close();
});

type Line = Record<string, unknown> & { msg?: string; level?: number };

async function run(level: 'info' | 'debug'): Promise<{ lines: Line[]; raw: string[] }> {
  const raw: string[] = [];
  const config = parseConfig({
    listen: { host: '127.0.0.1', port: 0 },
    health: { interval_ms: 0 },
    models: [{ name: 'm', upstream_model: 'm', layout: 'passthrough', workers: [{ url: sim.url, id: 'a' }] }],
  });
  const gw: StartedGateway = await startGateway(config, {
    logger: { level, stream: { write: (s: string) => raw.push(s) } } as never,
  });
  try {
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: SECRET, defaultQuery: { api_key: SECRET } });
    for (const id of ['log-a', 'log-b'])
      await client.chat.completions.create(
        { model: 'm', messages: [{ role: 'user', content: `hello ${id}` }], max_tokens: 4 },
        { headers: { 'x-request-id': id } },
      );
  } finally {
    await gw.close();
  }
  return { lines: raw.map((s) => JSON.parse(s) as Line), raw };
}

describe('request log', () => {
  it('writes one info line per request with its fields, and no key', async () => {
    const { lines, raw } = await run('info');
    const perRequest = lines.filter((l) => l.reqId === 'log-a' || l.reqId === 'log-b');
    expect(perRequest.map((l) => [l.reqId, l.msg])).toEqual([
      ['log-a', 'request completed'],
      ['log-b', 'request completed'],
    ]);
    expect(lines.some((l) => l.msg === 'incoming request')).toBe(false);
    for (const l of perRequest) {
      const req = l.req as Record<string, unknown>;
      expect(req.method).toBe('POST');
      expect(String(req.url)).toMatch(/^\/v1\/chat\/completions\?api_key=/);
      expect((l.res as Record<string, unknown>).statusCode).toBe(200);
      expect(typeof l.responseTime).toBe('number');
      expect(l.level).toBe(30);
    }
    for (const s of raw) expect(s).not.toContain(SECRET);
  });

  it('writes the incoming line at debug, redacted too', async () => {
    const { lines, raw } = await run('debug');
    const incoming = lines.filter((l) => l.msg === 'incoming request' && l.reqId === 'log-a');
    expect(incoming).toHaveLength(1);
    expect(incoming[0]!.level).toBe(20);
    expect(String((incoming[0]!.req as Record<string, unknown>).url)).toMatch(/^\/v1\/chat\/completions\?api_key=/);
    for (const s of raw) expect(s).not.toContain(SECRET);
  });
});
