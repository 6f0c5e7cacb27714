// A worker that answers headers but never a body byte must not keep the prompt's prefill tokens
// queued on it: bounded-load routing would otherwise steer traffic away from it forever.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { parseConfig } from '../../gateway/config/load.ts';
import { startGateway, type StartedGateway } from '../../gateway/server.ts';

let up: Server;
let gw: StartedGateway;

beforeAll(async () => {
  up = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json', 'content-length': '0' }).end());
  });
  await new Promise<void>((r) => up.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(up.address() as AddressInfo).port}`;
  const config = parseConfig({
    listen: { host: '127.0.0.1', port: 0 },
    health: { interval_ms: 0 },
    models: [{ name: 'm', layout: 'passthrough', workers: [{ url, id: 'empty' }] }],
  });
  gw = await startGateway(config, { logger: false });
});

afterAll(async () => {
  await gw?.close();
  await new Promise((r) => up.close(r));
});

it('releases queued prefill tokens when the answer has no body', async () => {
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x'.repeat(4000) }] }),
  });
  expect(res.status).toBe(502);
  const fleet = (await (await fetch(`${gw.url}/v1/gateway/workers`)).json()) as {
    models: { workers: { inFlight: number; queuedPrefillTokens: number }[] }[];
  };
  expect(fleet.models[0].workers.map((w) => [w.inFlight, w.queuedPrefillTokens])).toEqual([[0, 0]]);
});
