// Which models' engine-metrics scrapers go quiet while the gateway is idle (review s30 F5): only a
// late-binding model alone in front of its fleet. An arrival model that set scrape_metrics_ms polls
// as configured (its policy reads the engines' counts at arrival), and a late-binding model whose
// replicas share Redis polls too (another replica's calls load the same engines). Real sockets: an
// engine that serves vLLM's series and counts the GETs; the assembled gateway; no call is sent.
import { createServer, type Server } from 'node:http';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { startAssembledGateway } from '../../gateway/assemble.ts';
import { parseConfig } from '../../gateway/config/load.ts';
import { until } from '../helpers/until.ts';

const VLLM = 'vllm:num_requests_waiting{model_name="m"} 4\nvllm:num_requests_running{model_name="m"} 2\n';

const open: Array<{ close(): Promise<void> | void }> = [];
afterEach(async () => {
  for (const o of open.splice(0).reverse()) await o.close();
});

async function engine() {
  const got = { gets: 0 };
  const srv: Server = createServer((req, res) => {
    if (req.method === 'GET' && req.url === '/metrics') {
      got.gets++;
      res.end(VLLM);
    } else res.writeHead(404).end();
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  open.push({ close: () => new Promise<void>((r) => srv.close(() => r())) });
  return { url: `http://127.0.0.1:${(srv.address() as { port: number }).port}`, got };
}

async function gateway(model: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  const e = await engine();
  const config = parseConfig({
    listen: { host: '127.0.0.1', port: 0 },
    auth: { mode: 'none' },
    health: { interval_ms: 0 },
    ledger: { path: ':memory:' },
    ...extra,
    models: [{ name: 'm', layout: 'passthrough', ...model, workers: [{ url: e.url }] }],
  });
  const gw = await startAssembledGateway(config, {
    logger: false,
    reporting: { pricingTable: null, costReporting: false },
  });
  open.push(gw);
  return { e, gw, dispatch: config.models[0].dispatch };
}

describe('engine-metrics scraping while the gateway is idle (review s30 F5)', () => {
  it('an arrival model with scrape_metrics_ms polls with nothing in flight and keeps the engine’s counts', async () => {
    const { e, gw, dispatch } = await gateway({ dispatch: 'arrival', scrape_metrics_ms: 20 });
    expect(dispatch).toBe('arrival');
    await until(() => e.got.gets >= 3);
    const w = gw.ctx.fleet.get('m')!.workers[0];
    expect(w.inFlight).toBe(0);
    expect(w.engine).toEqual({ waiting: 4, running: 2, kvUsage: undefined });
  });

  it('a late-binding model alone in front of its fleet sends no GET while idle', async () => {
    const { e, dispatch } = await gateway({ scrape_metrics_ms: 20 });
    expect(dispatch).toBe('admission');
    // a control that polls at the same interval in the same time: the quiet one is not just slow
    const control = await gateway({ dispatch: 'arrival', scrape_metrics_ms: 20 });
    await until(() => control.e.got.gets >= 3);
    expect(e.got.gets).toBe(0);
  });

  it('a late-binding model whose replicas share Redis polls while idle', async (ctx) => {
    const redisUrl = inject('redisUrl');
    if (!redisUrl) ctx.skip();
    const { e, dispatch } = await gateway({ scrape_metrics_ms: 20, policy: 'ctxgate' }, { redis: { url: redisUrl } });
    expect(dispatch).toBe('admission');
    await until(() => e.got.gets >= 3);
  });
});
