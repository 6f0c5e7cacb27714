// An ejected worker's guessed routing entry is cleared, over real sockets: two reference workers
// behind the gateway, a conversation routed to one of them, then that worker goes down. Whether the
// ejection comes from the active health check (the worker's port refuses) or from failed requests
// (its connections reset), the policy must stop listing blocks there: a worker that went down or
// restarted holds none of them, and a re-admitted worker would otherwise draw the conversation
// back for cache it does not have. ctxgate and a baseline (dynamo_kv) alike.
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../gateway/config/load.ts';
import { type StartedGateway, startGateway } from '../../gateway/server.ts';
import type { PrefixIndex } from '../../kvplanner/prefix-index.ts';
import { type SimWorker, startSimWorker } from '../../loadtest/sim-worker/index.ts';

let sims: SimWorker[] = [];
let gw: StartedGateway | undefined;
afterEach(async () => {
  await gw?.close();
  await Promise.all(sims.map((w) => w.close()));
  gw = undefined;
  sims = [];
});

async function rig(): Promise<StartedGateway> {
  sims = await Promise.all([1, 2].map((seed) => startSimWorker({ model: 'm', seed, timeScale: 0 })));
  const workers = sims.map((s, i) => ({ url: s.url, id: `w${i}` }));
  const config = parseConfig({
    listen: { host: '127.0.0.1', port: 0 },
    // no timer: the test runs the health rounds itself; one failure ejects
    health: { interval_ms: 0, eject_after: 1, readmit_after: 1 },
    upstream: { attempts: 2 },
    models: [
      { name: 'c', upstream_model: 'm', layout: 'passthrough', policy: 'ctxgate', workers },
      { name: 'd', upstream_model: 'm', layout: 'passthrough', policy: 'dynamo_kv', workers },
    ],
  });
  gw = await startGateway(config, { logger: false });
  return gw;
}

const text = 'Read the repository rules before you change anything, then explain each change. '.repeat(30);

async function ask(g: StartedGateway, model: string): Promise<string> {
  const client = new OpenAI({
    baseURL: `${g.url}/v1`,
    apiKey: 'none',
    maxRetries: 0,
    defaultHeaders: { 'x-session-id': 'conv-1' },
  });
  const { response } = await client.chat.completions
    .create({ model, max_tokens: 4, messages: [{ role: 'user', content: text }] })
    .withResponse();
  return response.headers.get('x-ctxgate-worker')!;
}

const indexOf = (g: StartedGateway, model: string): PrefixIndex =>
  (g.ctx.fleet.get(model)!.policy as unknown as { index: PrefixIndex }).index;
const healthy = (g: StartedGateway, model: string, id: string): boolean =>
  g.ctx.fleet.get(model)!.byId.get(id)!.healthy;

/** Asks once through `model`, ejects the worker that answered by closing it and running the
 *  health check, and checks that its guessed blocks left the index; the worker's id. */
async function ejectHome(g: StartedGateway, model: string): Promise<string> {
  const home = await ask(g, model);
  expect(indexOf(g, model).size(home)).toBeGreaterThan(0);
  await sims[Number(home.slice(1))].close();
  await g.checkHealth();
  expect(healthy(g, model, home)).toBe(false);
  expect(indexOf(g, model).size(home)).toBe(0);
  return home;
}

describe('an ejected worker leaves the routing index', () => {
  it('ejected by the health check (its port refuses): its guessed blocks go, the other worker learns the conversation', async () => {
    const g = await rig();
    // the home's entry was the conversation's chain before the fix
    const home = await ejectHome(g, 'c');
    const other = home === 'w0' ? 'w1' : 'w0';
    expect(await ask(g, 'c')).toBe(other);
    expect(indexOf(g, 'c').size(other)).toBeGreaterThan(0);
  });

  it('a baseline with an index of its own (dynamo_kv) forgets an ejected worker too', async () => {
    await ejectHome(await rig(), 'd');
  });

  it('ejected by failed requests (connections reset): its guessed blocks go', async () => {
    const g = await rig();
    const home = await ask(g, 'c');
    const before = indexOf(g, 'c').size(home);
    expect(before).toBeGreaterThan(0);
    sims[Number(home.slice(1))].setFault({ reset: true });
    // the conversation's next call goes home, is reset there (one failure ejects), fails over
    const served = await ask(g, 'c');
    expect(served).not.toBe(home);
    expect(healthy(g, 'c', home)).toBe(false);
    expect(indexOf(g, 'c').size(home)).toBe(0);
  });
});
