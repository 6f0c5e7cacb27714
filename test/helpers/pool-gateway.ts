// The render pool tests' gateway over real sockets: a fake upstream `w` behind an assembled
// gateway serving one model `m` (qwen3, ctxgate layout) with the given render_pool settings.
import { afterEach } from 'vitest';
import { type AssembleOptions, startAssembledGateway } from '../../gateway/assemble.ts';
import { parseConfig } from '../../gateway/config/load.ts';
import type { GatewayConfig } from '../../gateway/config/schema.ts';
import { startFakeUpstream, type FakeUpstream } from './fake-upstream.ts';
import { keysAuth } from './keys.ts';

export type AssembledGateway = Awaited<ReturnType<typeof startAssembledGateway>>;

export interface PoolGatewayOptions {
  renderPool: Record<string, unknown>;
  /** `{ tenant: key }`: auth mode keys; absent: no auth. */
  tenants?: Record<string, string>;
  model?: string;
  /** Besides logger: false and reporting: false. */
  assemble?: AssembleOptions;
}

/** Started upstream first; `config` lets a test start another gateway like it. */
export async function startPoolGateway(
  o: PoolGatewayOptions,
): Promise<{ up: FakeUpstream; gw: AssembledGateway; config: GatewayConfig }> {
  const up = await startFakeUpstream({ name: 'w' });
  try {
    const config = parseConfig({
      listen: { host: '127.0.0.1', port: 0 },
      auth: o.tenants ? keysAuth(o.tenants) : { mode: 'none' },
      health: { interval_ms: 0 },
      render_pool: o.renderPool,
      models: [{ name: o.model ?? 'm', tokenizer: 'qwen3', layout: 'ctxgate', workers: [{ url: up.url, id: 'w' }] }],
    });
    const gw = await startAssembledGateway(config, { logger: false, reporting: false, ...o.assemble });
    return { up, gw, config };
  } catch (err) {
    await up.close();
    throw err;
  }
}

export interface PoolGateways {
  /** startPoolGateway; the gateway and its upstream are closed after the test. */
  start(o: PoolGatewayOptions): ReturnType<typeof startPoolGateway>;
  /** A gateway the test started itself, closed after the test like the others. */
  closeAfter(gw: AssembledGateway): void;
}

/** Call inside a describe block: registers the afterEach that closes, after each test, every
 *  gateway started through it (gateways first, then upstreams, in start order). A test may close
 *  one itself first: a gateway's close() runs once however often it is called. */
export function poolGatewaysPerTest(): PoolGateways {
  let gateways: AssembledGateway[] = [];
  let upstreams: FakeUpstream[] = [];
  afterEach(async () => {
    const [gws, ups] = [gateways, upstreams];
    gateways = [];
    upstreams = [];
    for (const gw of gws) await gw.close();
    for (const up of ups) await up.close();
  });
  return {
    async start(o) {
      const started = await startPoolGateway(o);
      gateways.push(started.gw);
      upstreams.push(started.up);
      return started;
    },
    closeAfter(gw) {
      gateways.push(gw);
    },
  };
}
