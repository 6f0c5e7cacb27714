// Child process of the overhead bench: a bare @fastify/http-proxy and ctxgate (assembled as
// `ctxgate serve` assembles it: no auth, silent, its ledger in a temp dir) in front of the same
// upstream. ctxgate serves two models: BENCH_MODEL as the default pipeline (layout ctxgate, the
// qwen3 tokenizer, policy ctxgate) and PASSTHROUGH_MODEL (layout passthrough, no tokenizer).
// Prints their URLs as one JSON line, then answers stdin lines: `reset` clears the stage timers
// (on when CTXGATE_STAGE_TIMERS=1), `times` prints them as one JSON line, `gc` the process's GC
// pauses so far (overhead/gc-pauses.ts) as one JSON line.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import Fastify from 'fastify';
import proxy from '@fastify/http-proxy';
import { parseConfig } from '../gateway/config/load.ts';
import { startAssembledGateway } from '../gateway/assemble.ts';
import { resetStageTimes, stageTimes } from '../middleware/perf/stage-timers.ts';
import { watchGc } from './overhead/gc-pauses.ts';
import { BENCH_MODEL, BENCH_TOKENIZER, PASSTHROUGH_MODEL } from './overhead/models.ts';

const gcPauses = watchGc();
const upstream = process.argv[2];
if (!upstream) throw new Error('usage: overhead-proxies.ts UPSTREAM_URL');

const bare = Fastify({ logger: false, bodyLimit: 64 * 1024 * 1024 });
await bare.register(proxy, { upstream, prefix: '/', http: { requestOptions: { timeout: 60_000 } } });
const bareUrl = await bare.listen({ host: '127.0.0.1', port: 0 });

const config = parseConfig({
  listen: { host: '127.0.0.1', port: 0 },
  auth: { mode: 'none' },
  health: { interval_ms: 0 },
  ledger: { path: join(mkdtempSync(join(tmpdir(), 'ctxgate-overhead-')), 'ledger.db') },
  models: [
    {
      name: BENCH_MODEL,
      layout: 'ctxgate',
      tokenizer: BENCH_TOKENIZER,
      policy: 'ctxgate',
      workers: [{ url: upstream }],
    },
    { name: PASSTHROUGH_MODEL, layout: 'passthrough', workers: [{ url: upstream }] },
  ],
});
const gw = await startAssembledGateway(config, {
  logger: false,
  reporting: { pricingTable: null, costReporting: false },
});
process.stdout.write(JSON.stringify({ bare: bareUrl, ctxgate: gw.url }) + '\n');

// A normal exit on SIGTERM, so `--cpu-prof` writes its profile.
process.once('SIGTERM', () => {
  void Promise.allSettled([gw.close(), bare.close()]).then(() => process.exit(0));
});
createInterface({ input: process.stdin }).on('line', (cmd) => {
  if (cmd === 'reset') {
    resetStageTimes();
    process.stdout.write('ok\n');
  } else if (cmd === 'times') process.stdout.write(JSON.stringify(stageTimes()) + '\n');
  else if (cmd === 'gc') process.stdout.write(JSON.stringify(gcPauses()) + '\n');
  else process.stdout.write(JSON.stringify({ error: `unknown command ${cmd}` }) + '\n');
});
