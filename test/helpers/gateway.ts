// Starts a gateway in front of fake upstreams for a test, silent and on an ephemeral port.
import OpenAI from 'openai';
import { parseConfig } from '../../gateway/config/load.ts';
import type { GatewayDeps } from '../../gateway/context.ts';
import { startGateway, type StartedGateway } from '../../gateway/server.ts';
import type { UsageEvent } from '../../gateway/usage-event.ts';
import { startFakeUpstream, type FakeUpstream, type FakeUpstreamOptions } from './fake-upstream.ts';
export { until, UNTIL_DEADLINE_MS } from './until.ts';

export interface TestRig {
  gw: StartedGateway;
  ups: FakeUpstream[];
  usage: UsageEvent[];
  client(key?: string): OpenAI;
  close(): Promise<void>;
}

export async function startRig(
  opts: {
    upstreams?: FakeUpstreamOptions[];
    config?: Record<string, unknown>;
    model?: Record<string, unknown>;
    deps?: GatewayDeps;
    env?: NodeJS.ProcessEnv;
  } = {},
): Promise<TestRig> {
  const ups = await Promise.all((opts.upstreams ?? [{ name: 'a' }, { name: 'b' }]).map((o) => startFakeUpstream(o)));
  const raw = {
    listen: { host: '127.0.0.1', port: 0 },
    auth: { mode: 'none' },
    health: { interval_ms: 0 },
    ...opts.config,
    models: [
      { name: 'm1', layout: 'passthrough', workers: ups.map((u) => ({ url: u.url, id: u.name })), ...opts.model },
    ],
  };
  const config = parseConfig(raw, 'test', opts.env ?? process.env);
  const usage: UsageEvent[] = [];
  const gw = await startGateway(config, { logger: false, onUsage: (ev) => usage.push(ev), ...opts.deps });
  return {
    gw,
    ups,
    usage,
    client: (key = 'none') => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: key, maxRetries: 0, timeout: 10_000 }),
    close: async () => {
      await gw.close();
      await Promise.all(ups.map((u) => u.close().catch(() => undefined)));
    },
  };
}
