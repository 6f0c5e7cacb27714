// Child process of the overhead bench: a bare @fastify/http-proxy and ctxgate (layout
// passthrough, no auth, silent) in front of the same upstream. Prints their URLs as one JSON line.
import Fastify from 'fastify';
import proxy from '@fastify/http-proxy';
import { parseConfig } from '../gateway/config/load.ts';
import { startGateway } from '../gateway/server.ts';

export const BENCH_MODEL = 'bench-model';

const upstream = process.argv[2];
if (!upstream) throw new Error('usage: overhead-proxies.ts UPSTREAM_URL');

const bare = Fastify({ logger: false, bodyLimit: 64 * 1024 * 1024 });
await bare.register(proxy, { upstream, prefix: '/', http: { requestOptions: { timeout: 60_000 } } });
const bareUrl = await bare.listen({ host: '127.0.0.1', port: 0 });

const config = parseConfig({
  listen: { host: '127.0.0.1', port: 0 },
  auth: { mode: 'none' },
  health: { interval_ms: 0 },
  models: [{ name: BENCH_MODEL, layout: 'passthrough', workers: [{ url: upstream }] }],
});
const gw = await startGateway(config, { logger: false });
process.stdout.write(JSON.stringify({ bare: bareUrl, ctxgate: gw.url }) + '\n');
