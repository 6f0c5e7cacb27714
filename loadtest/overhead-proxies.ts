// Child process of the overhead bench: one proxy per process, so that a row's GCs and compile
// threads are its own target's. `bare`: a bare @fastify/http-proxy; `ctxgate`: ctxgate (assembled
// as `ctxgate serve` assembles it: no auth, silent, its ledger in a temp dir), serving two models:
// BENCH_MODEL as the default pipeline (layout ctxgate, the qwen3 tokenizer, policy ctxgate) and
// PASSTHROUGH_MODEL (layout passthrough, no tokenizer). Both in front of UPSTREAM_URL.
// Prints its URL as one line, then answers stdin lines: `reset` clears the stage timers (on when
// CTXGATE_STAGE_TIMERS=1), `times` prints them as one JSON line, `gc` the process's GC pauses so
// far (overhead/gc-pauses.ts) as one JSON line, `trace` the laps since the reset and the GC pauses
// (overhead/slow-calls.ts reads them) as one JSON line, `path` the points of each request's
// critical path since the reset (overhead/critical-path.ts, ctxgate only) as one JSON line.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import Fastify from 'fastify';
import proxy from '@fastify/http-proxy';
import { parseConfig } from '../gateway/config/load.ts';
import { startAssembledGateway } from '../gateway/assemble.ts';
import { resetStageTimes, stageTimes, stageTrace } from '../middleware/perf/stage-timers.ts';
import { watchGatewayPath } from './overhead/critical-path.ts';
import { watchGc } from './overhead/gc-pauses.ts';
import { BENCH_MODEL, BENCH_TOKENIZER, PASSTHROUGH_MODEL } from './overhead/models.ts';

const gcPauses = watchGc();
const [upstream, role] = process.argv.slice(2);
if (!upstream || (role !== 'bare' && role !== 'ctxgate'))
  throw new Error('usage: overhead-proxies.ts UPSTREAM_URL bare|ctxgate');

async function startBare(): Promise<{ url: string; close(): Promise<unknown> }> {
  const bare = Fastify({ logger: false, bodyLimit: 64 * 1024 * 1024 });
  await bare.register(proxy, { upstream, prefix: '/', http: { requestOptions: { timeout: 60_000 } } });
  return { url: await bare.listen({ host: '127.0.0.1', port: 0 }), close: () => bare.close() };
}

async function startCtxgate(): Promise<{ url: string; close(): Promise<unknown> }> {
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
  return startAssembledGateway(config, { logger: false, reporting: { pricingTable: null, costReporting: false } });
}

// Before the server starts: every request of ctxgate's is on its critical path's lists.
const path = role === 'ctxgate' ? watchGatewayPath() : undefined;
const served = role === 'bare' ? await startBare() : await startCtxgate();
process.stdout.write(served.url + '\n');

// A normal exit on SIGTERM, so `--cpu-prof` writes its profile.
process.once('SIGTERM', () => {
  void served.close().finally(() => process.exit(0));
});
createInterface({ input: process.stdin }).on('line', (cmd) => {
  if (cmd === 'reset') {
    resetStageTimes();
    path?.reset();
    process.stdout.write('ok\n');
  } else if (cmd === 'times') process.stdout.write(JSON.stringify(stageTimes()) + '\n');
  else if (cmd === 'gc') process.stdout.write(JSON.stringify(gcPauses()) + '\n');
  else if (cmd === 'path') process.stdout.write(JSON.stringify(path?.path() ?? null) + '\n');
  else if (cmd === 'trace') process.stdout.write(JSON.stringify({ laps: stageTrace(), gc: gcPauses.events() }) + '\n');
  else process.stdout.write(JSON.stringify({ error: `unknown command ${cmd}` }) + '\n');
});
