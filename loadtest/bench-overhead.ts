// ctxgate bench overhead: what the gateway adds on top of its upstream, beside a bare reverse proxy
// and a peer gateway, in one run against one zero-latency upstream (loadtest/fake-upstream.ts).
// Growing sessions (loadtest/overhead/growing-sessions.ts: each call resends the session plus one
// ~550-token tool output, ~1k to ~17k tokens, a new session after 30 calls) go directly, through a
// bare @fastify/http-proxy, through the Portkey gateway (non-stream: its stream path fails on
// Node 20) and through ctxgate's default pipeline (layout ctxgate, qwen3 tokenizer, policy
// ctxgate), with 1 connection (latency without queueing) and 16 (throughput). Then, as before,
// fixed ~1k/~16k-token bodies, stream and not, direct / bare proxy / ctxgate passthrough. The
// gateway's stage timers (middleware/perf/stage-timers.ts) give its time per request by stage
// on the 1-connection growing run. Upstream, bare proxy, ctxgate and Portkey each run in their
// own child process (no row carries another target's garbage or GCs), so the load generator does
// not share their loop either; all three proxies with the gateway's Node flags as deployed
// (gateway/node-flags.ts: like for like, a V8 GC knob, not ctxgate code). Each measured run
// follows a warm-up until the target's code is compiled (overhead/warm-up.ts: CPU per 1,000
// calls stops falling, bounded; the same rule for every target, printed per row).
// Settings: --duration per run (default 3 s), --c1-calls of each growing 1-connection row (default
// 4,000: its p99 the ~40th slowest call), --connections of the fixed-body runs (default 8),
// --sessions (default 2 × 16 + 2).
// This file starts the processes and runs the sections: overhead/growing-rows.ts (the targets'
// rows), overhead/ingress-rows.ts, overhead/fixed-rows.ts; one measured row is overhead/measure.ts.
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { STAGE_TIMERS_ENV } from '../middleware/perf/stage-timers.ts';
import { GATEWAY_NODE_FLAGS } from '../gateway/node-flags.ts';
import { runFixedRows } from './overhead/fixed-rows.ts';
import { watchGc } from './overhead/gc-pauses.ts';
import { runGrowingRows } from './overhead/growing-rows.ts';
import { DEFAULT_DURATION_S, help } from './overhead/help.ts';
import { runIngressRows } from './overhead/ingress-rows.ts';
import { child, type Child } from './overhead/load.ts';
import type { BenchRun } from './overhead/measure.ts';
import { BENCH_TOKENIZER } from './overhead/models.ts';
import { bareProxyNodeArgs, parseGatewayNodeFlags, proxiesNodeArgs } from './overhead/node-args.ts';
import { DEFAULT_C1_CALLS, THROUGHPUT_CONNECTIONS, type OverheadCase, type OverheadResult } from './overhead/result.ts';
import { formatSummary } from './overhead/summary.ts';

export const DEFAULT_CONNECTIONS = 8;
export { DEFAULT_DURATION_S, help } from './overhead/help.ts';
export { DEFAULT_C1_CALLS, INGRESS_ROUNDS, THROUGHPUT_CONNECTIONS } from './overhead/result.ts';
export type { OverheadCase, OverheadResult, Target } from './overhead/result.ts';
export { chatBody } from './overhead/fixed-rows.ts';
export { cpuSplit } from './overhead/format-case.ts';
export { bareProxyNodeArgs, parseGatewayNodeFlags, portkeyNodeArgs, proxiesNodeArgs } from './overhead/node-args.ts';

export interface OverheadOptions {
  durationS?: number;
  /** Calls of each growing 1-connection row (0: run them for durationS, as before). */
  c1Calls?: number;
  connections?: number;
  sessions?: number;
  only?: 'growing' | 'fixed' | 'ingress';
  /** Skip the Portkey baseline. */
  noPortkey?: boolean;
  /** The upstream reports cached_tokens 0 on every call (a worker that never caches) instead of
   *  what a prefix-caching engine reports (loadtest/fake-upstream-cache.ts). */
  neverCachingUpstream?: boolean;
  /** Directory for a V8 CPU profile of the gateway process (`--cpu-prof`). */
  cpuProfDir?: string;
  /** Node/V8 flags for ctxgate's process after the deployed ones (`--gateway-node-flags`): an A/B
   *  of a GC setting on the bench itself, base and candidate run after run. The other proxies keep
   *  the deployed flags, so a row's "like for like" holds only for the run without them. */
  gatewayNodeFlags?: readonly string[];
  log?: (line: string) => void;
}

export async function runOverheadBench(opts: OverheadOptions = {}): Promise<OverheadResult> {
  const durationS = opts.durationS ?? DEFAULT_DURATION_S;
  const c1Calls = opts.c1Calls ?? DEFAULT_C1_CALLS;
  const connections = opts.connections ?? DEFAULT_CONNECTIONS;
  const sessions = opts.sessions ?? 2 * THROUGHPUT_CONNECTIONS + 2;
  const log = opts.log ?? (() => undefined);
  const here = (f: string): string => fileURLToPath(new URL(f, import.meta.url));
  const stops: (() => Promise<void>)[] = [];
  try {
    // as deployed: the upstream reports the prefix it reused, as vLLM and SGLang do (a report of 0
    // would have ctxgate's index evict and re-insert each prompt's chain on every call)
    // --trace: the upstream keeps each request's span and its GC pauses for the slow-call split
    const up = await child(
      here('./fake-upstream.ts'),
      opts.neverCachingUpstream ? ['0', '--trace'] : ['0', '--prefix-cache', BENCH_TOKENIZER, '--trace'],
    );
    // this process is the load generator: its GC pauses stop the clock that reads every latency
    const loadgenGc = watchGc();
    stops.push(up.stop);
    const upstream = up.line.trim();
    // One process per proxy: a row's GCs and compile threads are its own target's.
    const px: Child = await child(
      here('./overhead-proxies.ts'),
      [upstream, 'ctxgate'],
      { [STAGE_TIMERS_ENV]: '1' },
      proxiesNodeArgs(opts.cpuProfDir, opts.gatewayNodeFlags),
    );
    stops.unshift(px.stop);
    const bp: Child = await child(here('./overhead-proxies.ts'), [upstream, 'bare'], {}, bareProxyNodeArgs());
    stops.unshift(bp.stop);
    const urls = { bare: bp.line.trim(), ctxgate: px.line.trim() };
    const cases: OverheadCase[] = [];
    const res: OverheadResult = {
      cases,
      duration_s: durationS,
      c1_calls: c1Calls,
      connections,
      sessions,
      ...(opts.gatewayNodeFlags?.length ? { gateway_node_flags: [...opts.gatewayNodeFlags] } : {}),
    };
    if (opts.gatewayNodeFlags?.length)
      log(
        `ctxgate's process runs with ${opts.gatewayNodeFlags.join(' ')} after ${GATEWAY_NODE_FLAGS.join(' ')} (--gateway-node-flags); the other proxies without`,
      );
    const run: BenchRun = {
      durationS,
      c1Calls,
      connections,
      sessions,
      log,
      up,
      upstream,
      px,
      bp,
      urls,
      loadgenGc,
      cases,
      res,
      stops,
    };
    if (opts.only === undefined || opts.only === 'growing') await runGrowingRows(run, opts.noPortkey);
    if (opts.only === undefined || opts.only === 'ingress') await runIngressRows(run);
    if (opts.only === undefined || opts.only === 'fixed') await runFixedRows(run);
    return res;
  } finally {
    for (const stop of stops) await stop();
  }
}

export async function run(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      json: { type: 'boolean' },
      duration: { type: 'string' },
      'c1-calls': { type: 'string' },
      connections: { type: 'string' },
      sessions: { type: 'string' },
      only: { type: 'string' },
      'no-portkey': { type: 'boolean' },
      'never-caching-upstream': { type: 'boolean' },
      'cpu-prof': { type: 'string' },
      'gateway-node-flags': { type: 'string' },
    },
  });
  if (values.only !== undefined && values.only !== 'growing' && values.only !== 'fixed' && values.only !== 'ingress') {
    process.stderr.write(`bench overhead: --only must be growing, ingress or fixed\n\n${help}\n`);
    return 2;
  }
  const num = (v: string | undefined, name: string, min: number): number | undefined => {
    if (v === undefined) return undefined;
    const n = Number(v);
    if (!Number.isFinite(n) || n < min) throw new Error(`--${name} must be a number >= ${min}`);
    return n;
  };
  let durationS: number | undefined, connections: number | undefined, sessions: number | undefined;
  let c1Calls: number | undefined;
  let gatewayNodeFlags: string[];
  try {
    gatewayNodeFlags = parseGatewayNodeFlags(values['gateway-node-flags']);
    durationS = num(values.duration, 'duration', 1);
    c1Calls = num(values['c1-calls'], 'c1-calls', 0);
    connections = num(values.connections, 'connections', 1);
    // Fewer sessions than connections would send a session's next call before its last one ended.
    sessions = num(values.sessions, 'sessions', THROUGHPUT_CONNECTIONS + 2);
  } catch (err) {
    process.stderr.write(`bench overhead: ${(err as Error).message}\n\n${help}\n`);
    return 2;
  }
  const res = await runOverheadBench({
    durationS,
    c1Calls: c1Calls === undefined ? undefined : Math.round(c1Calls),
    connections,
    sessions: sessions === undefined ? undefined : Math.round(sessions),
    only: values.only as OverheadOptions['only'],
    noPortkey: values['no-portkey'],
    neverCachingUpstream: values['never-caching-upstream'],
    cpuProfDir: values['cpu-prof'],
    gatewayNodeFlags,
    log: values.json ? undefined : (l) => process.stdout.write(l + '\n'),
  });
  if (values.json) {
    process.stdout.write(JSON.stringify(res, null, 2) + '\n');
    return 0;
  }
  process.stdout.write(formatSummary(res));
  return 0;
}
