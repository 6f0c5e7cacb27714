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
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { STAGE_TIMERS_ENV, STAGE_TRACE_MAX, type StageTime, type StageTrace } from '../middleware/perf/stage-timers.ts';
import { GATEWAY_NODE_FLAGS } from '../gateway/node-flags.ts';
import { BENCH_MODEL, BENCH_TOKENIZER, PASSTHROUGH_MODEL } from './overhead/models.ts';
import { GrowingTraffic } from './overhead/growing-sessions.ts';
import { chatToAnthropic, chatToResponses } from './overhead/ingress-bodies.ts';
import { measureIngressCpu } from './overhead/ingress-cpu.ts';
import {
  child,
  load,
  primeSessions,
  rankFromSlowest,
  startPortkey,
  type Child,
  type LoadResult,
  type Portkey,
} from './overhead/load.ts';
import { gcDelta, type GcEvent, type GcPauses, watchGc } from './overhead/gc-pauses.ts';
import {
  formatGcInSections,
  formatSlowCalls,
  gcInSections,
  type Outside,
  SLOW_CALLS_SHARE,
  slowCallBreakdown,
  type SlowCalls,
} from './overhead/slow-calls.ts';
import { mainThreadCpuMs, processCpuMs } from './overhead/proc-cpu.ts';
import { formatTailCalls, type TailCalls, tailCalls } from './overhead/tail-calls.ts';
import { formatStageTable, perRequest, untimedMs } from './overhead/stage-table.ts';
import {
  DEFAULT_C1_CALLS,
  INGRESS_ROUNDS,
  THROUGHPUT_CONNECTIONS,
  type OverheadCase,
  type OverheadResult,
  type Target,
} from './overhead/result.ts';
import { formatSummary } from './overhead/summary.ts';
import {
  formatRounds,
  median,
  pairedRounds,
  type PairedTarget,
  THROUGHPUT_ROUNDS,
  type RoundRun,
  type ThroughputRounds,
} from './overhead/throughput-rounds.ts';
import {
  fmtWarmUp,
  WARMUP_CHUNK_CALLS,
  WARMUP_MAX_CHUNKS,
  WARMUP_MAX_S,
  WARMUP_MIN_CHUNKS,
  WARMUP_SETTLED_BAND,
  WARMUP_SETTLED_RUN,
  warmUp,
} from './overhead/warm-up.ts';

export const DEFAULT_DURATION_S = 3;
export const DEFAULT_CONNECTIONS = 8;
export { DEFAULT_C1_CALLS, INGRESS_ROUNDS, THROUGHPUT_CONNECTIONS } from './overhead/result.ts';
export type { OverheadCase, OverheadResult, Target } from './overhead/result.ts';

const BYTES_PER_TOKEN = 4;

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

/** A chat body of about `tokens` tokens: an agent-like history of tool outputs. */
export function chatBody(tokens: number, stream: boolean, model = PASSTHROUGH_MODEL): string {
  const line = 'src/service/handler.ts:142 validate_claims() returned status=ok elapsed=12ms\n';
  const chunk = line.repeat(Math.ceil((tokens * BYTES_PER_TOKEN) / 4 / line.length));
  const messages = [
    { role: 'system', content: 'You are a coding agent.' },
    { role: 'user', content: chunk },
    {
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'c1', type: 'function', function: { name: 'run', arguments: '{"cmd":"npm test"}' } }],
    },
    { role: 'tool', tool_call_id: 'c1', content: chunk },
    { role: 'assistant', content: chunk },
    { role: 'user', content: chunk },
  ];
  return JSON.stringify({ model, messages, max_tokens: 16, temperature: 0, ...(stream ? { stream: true } : {}) });
}

/** ` (#k/N)`: the percentile q is the k-th slowest of the run's N calls. */
const rankOf = (c: OverheadCase, q: number): string =>
  c.requests ? ` (#${rankFromSlowest(c.requests, q)}/${c.requests})` : '';

const fmtCase = (c: OverheadCase): string =>
  `${c.name.padEnd(40)} p50 ${c.p50_ms.toFixed(2).padStart(7)} ms  p99 ${c.p99_ms.toFixed(2).padStart(7)} ms${rankOf(c, 0.99).padEnd(14)} p99.9 ${c.p999_ms.toFixed(2).padStart(7)} ms${rankOf(c, 0.999).padEnd(13)} ${c.rps.toFixed(0).padStart(6)} req/s` +
  (c.cpu_ms_per_req !== undefined ? `  cpu ${c.cpu_ms_per_req.toFixed(2).padStart(6)} ms/req` : '') +
  (c.cpu_main_ms_per_req !== undefined ? ` (main ${c.cpu_main_ms_per_req.toFixed(2)})` : '') +
  (c.gc && c.requests
    ? `  gc ${c.gc.scavenges}+${c.gc.mark_compacts} ${((c.gc.scavenge_ms + c.gc.mark_ms) / c.requests).toFixed(2)} ms/req`
    : '') +
  (c.upstream_cpu_ms_per_req !== undefined ? `  upstream cpu ${c.upstream_cpu_ms_per_req.toFixed(2)} ms/req` : '') +
  (c.errors ? `  errors ${c.errors}` : '') +
  (c.warmup ? fmtWarmUp(c.warmup) : '');

/** A case's CPU per request split into main thread (GC pauses among it) and other threads. */
export function cpuSplit(
  c: Pick<OverheadCase, 'cpu_ms_per_req' | 'cpu_main_ms_per_req' | 'gc' | 'requests'>,
): { main_ms: number; gc_pause_ms: number; other_threads_ms: number } | undefined {
  const requests = c.requests;
  if (c.cpu_ms_per_req === undefined || c.cpu_main_ms_per_req === undefined || !c.gc || !requests) return undefined;
  return {
    main_ms: c.cpu_main_ms_per_req,
    gc_pause_ms: (c.gc.scavenge_ms + c.gc.mark_ms) / requests,
    other_threads_ms: Math.max(0, c.cpu_ms_per_req - c.cpu_main_ms_per_req),
  };
}

/** The calls a percentile of ctxgate's and direct's 1-connection rows was read from, and its rank. */
function callsBehind(
  gw: OverheadCase,
  direct: OverheadCase,
  q: number,
): { ctxgate: number; ctxgate_rank: number; direct: number; direct_rank: number } {
  const [g, d] = [gw.requests ?? 0, direct.requests ?? 0];
  return { ctxgate: g, ctxgate_rank: rankFromSlowest(g, q), direct: d, direct_rank: rankFromSlowest(d, q) };
}

/** Node flags of the child serving ctxgate: the gateway's as deployed (the image's ENTRYPOINT),
 *  then `extra` (a candidate V8 setting: V8 takes a flag's last value), plus a CPU profile when asked. */
export function proxiesNodeArgs(cpuProfDir?: string, extra: readonly string[] = []): string[] {
  return [...GATEWAY_NODE_FLAGS, ...extra, ...(cpuProfDir ? ['--cpu-prof', `--cpu-prof-dir=${cpuProfDir}`] : [])];
}

/** `--gateway-node-flags`'s value as flags: split on whitespace; each must start with `--` (a bare
 *  word would reach node as the script to run). */
export function parseGatewayNodeFlags(v: string | undefined): string[] {
  const flags = (v ?? '').split(/\s+/).filter((x) => x !== '');
  const bad = flags.find((x) => !x.startsWith('--'));
  if (bad !== undefined) throw new Error(`--gateway-node-flags: ${bad} is not a --flag`);
  return flags;
}

/** Node flags of the bare proxy's own process: the gateway's (like for like). */
export function bareProxyNodeArgs(): string[] {
  return [...GATEWAY_NODE_FLAGS];
}

/** Node flags of Portkey's process: the proxies' own (a generic V8 GC knob), so that the
 *  comparison is like for like rather than a tuned gateway against Node's defaults. */
export function portkeyNodeArgs(): string[] {
  return [...GATEWAY_NODE_FLAGS];
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
    let portkeyPid: number | undefined;
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
    const measure = async (
      c: Omit<OverheadCase, 'p50_ms' | 'p99_ms' | 'p999_ms' | 'rps' | 'errors'>,
      url: string,
      body: string | (() => string),
      headers?: Record<string, string>,
      before?: () => Promise<unknown>,
      path?: string,
      keepCalls?: boolean,
      amount?: number,
    ): Promise<LoadResult> => {
      // The process serving this target; direct's is the upstream (warmed by the same rule).
      const pid =
        c.target === 'direct'
          ? undefined
          : c.target === 'portkey'
            ? portkeyPid
            : c.target === 'bare_proxy'
              ? bp.proc.pid
              : px.proc.pid;
      const warmup = await warmUp(
        (amount) => load({ url, path, body, durationS, amount, connections: c.connections, headers }),
        () => processCpuMs(pid ?? up.proc.pid),
      );
      await before?.();
      const own = c.target === 'bare_proxy' ? bp : c.target === 'direct' || c.target === 'portkey' ? undefined : px;
      const gc0 = own ? (JSON.parse(await own.ask('gc')) as GcPauses) : undefined;
      const cpu0 = processCpuMs(pid);
      const main0 = mainThreadCpuMs(pid);
      const up0 = processCpuMs(up.proc.pid);
      const r = await load({ url, path, body, durationS, amount, connections: c.connections, headers, keepCalls });
      const up1 = processCpuMs(up.proc.pid);
      const cpu1 = processCpuMs(pid);
      const main1 = mainThreadCpuMs(pid);
      const oc: OverheadCase = {
        ...c,
        p50_ms: r.p50,
        p99_ms: r.p99,
        p999_ms: r.p999,
        rps: r.rps,
        errors: r.errors,
        requests: r.requests,
        warmup,
      };
      if (cpu0 !== undefined && cpu1 !== undefined && r.requests > 0) oc.cpu_ms_per_req = (cpu1 - cpu0) / r.requests;
      if (main0 !== undefined && main1 !== undefined && r.requests > 0)
        oc.cpu_main_ms_per_req = (main1 - main0) / r.requests;
      if (up0 !== undefined && up1 !== undefined && r.requests > 0)
        oc.upstream_cpu_ms_per_req = (up1 - up0) / r.requests;
      if (gc0 && own) oc.gc = gcDelta(gc0, JSON.parse(await own.ask('gc')) as GcPauses);
      cases.push(oc);
      log(fmtCase(oc));
      return r;
    };

    if (opts.only === undefined || opts.only === 'growing') {
      let portkey: Portkey | undefined;
      if (!opts.noPortkey) {
        portkey = await startPortkey(upstream, portkeyNodeArgs());
        portkeyPid = portkey.pid;
        stops.unshift(portkey.stop);
      }
      const traffic = new GrowingTraffic({ slots: sessions, model: BENCH_MODEL });
      const targets: [Target, string, Record<string, string>?][] = [
        ['direct', upstream],
        ['bare_proxy', urls.bare],
        ...(portkey ? [['portkey', portkey.url, portkey.headers] as [Target, string, Record<string, string>]] : []),
        ['ctxgate', urls.ctxgate],
      ];
      log(
        `growing sessions (${sessions} concurrent, ${traffic.calls} calls each, ~1k to ~17k tokens), non-stream; ` +
          `1 connection: ${c1Calls > 0 ? `${c1Calls} calls a row` : `${durationS} s a row`}:`,
      );
      log(
        "  (p99 / p99.9 #k/N: the k-th slowest of the run's N calls; a p99.9 is a handful of calls, not a tail estimate; " +
          "upstream cpu: the fake upstream's own CPU per request, on the same cores)",
      );
      let stages: Record<string, StageTime> = {};
      let gwRequests = 0;
      let slowCalls: SlowCalls | undefined;
      let directSlow: SlowCalls | undefined;
      let tail: TailCalls | undefined;
      let directTail: TailCalls | undefined;
      let stagesGc: Record<string, number> | undefined;
      for (const conns of [1, THROUGHPUT_CONNECTIONS]) {
        for (const [target, url, headers] of targets) {
          traffic.renew();
          // Each session's earlier calls first, so the target sees every measured call's history.
          await primeSessions(traffic, { url, durationS, connections: conns, headers });
          const isGw = target === 'ctxgate' && conns === 1;
          // the calls whose windows the slow-call split reads: ctxgate's and direct's at 1 connection
          const traced = conns === 1 && (target === 'ctxgate' || target === 'direct');
          let runStart = 0;
          // Each measured call's number in its session (the slow-call breakdown's first-call share).
          const callNo: number[] = [];
          const r = await measure(
            { name: `${target} growing c${conns}`, traffic: 'growing', target, stream: false, connections: conns },
            url,
            () => {
              const b = traffic.next();
              callNo.push(traffic.lastCall);
              return b;
            },
            headers,
            async () => {
              if (isGw) await px.ask('reset');
              if (traced) await up.ask('reset');
              runStart = performance.timeOrigin + performance.now();
              callNo.length = 0;
            },
            undefined,
            traced,
            conns === 1 && c1Calls > 0 ? c1Calls : undefined,
          );
          const outside = async (): Promise<Outside> => ({
            upstream: JSON.parse(await up.ask('trace')) as Outside['upstream'],
            loadgenGc: loadgenGc.events().filter((g) => g.start >= runStart),
          });
          if (traced && target === 'direct' && r.calls) {
            const none: StageTrace = { stages: [], stage: [], end: [], ms: [], parseCpu: [] };
            const out = await outside();
            const nos = callNo.slice(0, r.calls.ms.length);
            directSlow = slowCallBreakdown(r.calls, none, [], nos, SLOW_CALLS_SHARE, out);
            directTail = tailCalls(r.calls, [], out, undefined, nos);
          }
          if (isGw) {
            stages = JSON.parse(await px.ask('times')) as Record<string, StageTime>;
            gwRequests = r.requests;
            if (r.calls) {
              const tr = JSON.parse(await px.ask('trace')) as { laps: StageTrace; gc: GcEvent[] };
              const out = await outside();
              const nos = callNo.slice(0, r.calls.ms.length);
              slowCalls = slowCallBreakdown(r.calls, tr.laps, tr.gc, nos, SLOW_CALLS_SHARE, out);
              tail = tailCalls(r.calls, tr.gc, out, tr.laps, nos);
              if (tr.laps.end.length >= STAGE_TRACE_MAX)
                log(`(the stage trace kept its first ${STAGE_TRACE_MAX} laps: later calls show no timed sections)`);
              stagesGc = gcInSections(tr.laps, tr.gc);
            }
          }
        }
      }
      // The throughput verdict: ctxgate and Portkey take turns at 16 connections, order alternating
      // (overhead/throughput-rounds.ts), both already warm from the runs above.
      let rounds: ThroughputRounds | undefined;
      if (portkey) {
        const pk = portkey;
        const runRound = async (t: PairedTarget): Promise<RoundRun> => {
          const [url, headers, pid] =
            t === 'ctxgate' ? [urls.ctxgate, undefined, px.proc.pid] : [pk.url, pk.headers, pk.pid];
          traffic.renew();
          const conns = THROUGHPUT_CONNECTIONS;
          await primeSessions(traffic, { url, durationS, connections: conns, headers });
          const cpu0 = processCpuMs(pid);
          const r = await load({ url, body: () => traffic.next(), durationS, connections: conns, headers });
          const cpu1 = processCpuMs(pid);
          const cpu =
            cpu0 !== undefined && cpu1 !== undefined && r.requests > 0 ? (cpu1 - cpu0) / r.requests : undefined;
          return {
            // Answered calls only: a target that fails fast must not gain throughput by it.
            rps: Math.max(0, r.requests - r.errors) / durationS,
            requests: r.requests,
            errors: r.errors,
            ...(cpu !== undefined ? { cpu_ms_per_req: cpu } : {}),
          };
        };
        rounds = await pairedRounds(runRound);
        for (const l of formatRounds(rounds, 'Portkey', THROUGHPUT_CONNECTIONS)) log(l);
      }
      const g = (t: Target, c: number) =>
        cases.find((x) => x.traffic === 'growing' && x.target === t && x.connections === c);
      const d1 = g('direct', 1)!;
      const gw1 = g('ctxgate', 1)!;
      const bare1 = g('bare_proxy', 1)!;
      const pk1 = g('portkey', 1);
      const gw16 = g('ctxgate', THROUGHPUT_CONNECTIONS)!;
      const pk16 = g('portkey', THROUGHPUT_CONNECTIONS);
      const bare16 = g('bare_proxy', THROUGHPUT_CONNECTIONS)!;
      res.growing = {
        added_p50_ms: gw1.p50_ms - d1.p50_ms,
        added_p99_ms: gw1.p99_ms - d1.p99_ms,
        added_p999_ms: gw1.p999_ms - d1.p999_ms,
        p999_calls: callsBehind(gw1, d1, 0.999),
        p99_calls: callsBehind(gw1, d1, 0.99),
        portkey_added_p50_ms: pk1 ? pk1.p50_ms - d1.p50_ms : undefined,
        portkey_added_p99_ms: pk1 ? pk1.p99_ms - d1.p99_ms : undefined,
        bare_added_p50_ms: bare1.p50_ms - d1.p50_ms,
        bare_added_p99_ms: bare1.p99_ms - d1.p99_ms,
        throughput_ratio_vs_portkey: pk16 && pk16.rps > 0 ? gw16.rps / pk16.rps : undefined,
        ...(rounds ? { throughput_rounds: rounds } : {}),
        throughput_ratio_vs_bare_proxy: bare16.rps > 0 ? gw16.rps / bare16.rps : 0,
        stages: perRequest(stages, gwRequests),
        untimed_ms: untimedMs(perRequest(stages, gwRequests), gw1.cpu_main_ms_per_req),
        stages_gc_ms: stagesGc
          ? Object.fromEntries(Object.entries(stagesGc).map(([k, v]) => [k, gwRequests > 0 ? v / gwRequests : 0]))
          : undefined,
        cpu_ms_per_req: {
          ctxgate: gw16.cpu_ms_per_req,
          portkey: pk16?.cpu_ms_per_req,
          bare_proxy: bare16.cpu_ms_per_req,
        },
        upstream_cpu_ms_per_req: {
          direct: g('direct', THROUGHPUT_CONNECTIONS)?.upstream_cpu_ms_per_req,
          ctxgate: gw16.upstream_cpu_ms_per_req,
          portkey: pk16?.upstream_cpu_ms_per_req,
          bare_proxy: bare16.upstream_cpu_ms_per_req,
        },
        ctxgate_rps_per_core: gw16.cpu_ms_per_req ? 1000 / gw16.cpu_ms_per_req : undefined,
        ctxgate_cpu_split: cpuSplit(gw16),
        slow_calls: slowCalls,
        direct_slow_calls: directSlow,
        tail_calls: tail,
        direct_tail_calls: directTail,
      };
      log('');
      log(formatStageTable(res.growing.stages, gw1.cpu_main_ms_per_req));
      if (stagesGc) log(formatGcInSections(stagesGc, gwRequests));
      if (slowCalls) log(formatSlowCalls(slowCalls, undefined, directSlow));
      if (tail) log(formatTailCalls('ctxgate', tail, { gateway: true, middleCpuMs: slowCalls?.middle.cpu_ms }));
      if (directTail) log(formatTailCalls('direct', directTail, { gateway: false }));
      log('');
    }

    if (opts.only === undefined || opts.only === 'ingress') {
      // Same sessions, same gateway, same pipeline: only the ingress adapter differs. The APIs
      // take turns for INGRESS_ROUNDS rounds and each is judged by its median p50/p99, so machine
      // noise and warm-up order hit all three alike.
      const apis: [Target, string, ((json: string) => string) | undefined][] = [
        ['ctxgate', '/v1/chat/completions', undefined],
        ['ctxgate_anthropic', '/v1/messages', chatToAnthropic],
        ['ctxgate_responses', '/v1/responses', chatToResponses],
      ];
      log(
        `ingress APIs: growing sessions through the default pipeline, 1 connection, non-stream, ${INGRESS_ROUNDS} rounds:`,
      );
      const traffic = apis.map(([, , convert]) => new GrowingTraffic({ slots: sessions, model: BENCH_MODEL, convert }));
      const runs = new Map<Target, OverheadCase[]>();
      const renewed = apis.map(() => 0);
      for (let round = 0; round < INGRESS_ROUNDS; round++) {
        for (const [i, [target, path]] of apis.entries()) {
          const t = traffic[i];
          // Same conversations, session generations unique across APIs and rounds: no run
          // continues another run's sessions.
          for (; renewed[i] <= round * apis.length + i; renewed[i]++) t.renew();
          await primeSessions(t, { url: urls.ctxgate, path, durationS, connections: 1 });
          await measure(
            { name: `${target} ${path} r${round + 1}`, traffic: 'ingress', target, stream: false, connections: 1 },
            urls.ctxgate,
            () => t.next(),
            undefined,
            undefined,
            path,
          );
          runs.set(target, [...(runs.get(target) ?? []), cases.at(-1)!]);
        }
      }
      const med = (t: Target, k: 'p50_ms' | 'p99_ms'): number => median(runs.get(t)!.map((c) => c[k]));
      res.ingress = {
        anthropic_added_p50_ms: med('ctxgate_anthropic', 'p50_ms') - med('ctxgate', 'p50_ms'),
        anthropic_added_p99_ms: med('ctxgate_anthropic', 'p99_ms') - med('ctxgate', 'p99_ms'),
        responses_added_p50_ms: med('ctxgate_responses', 'p50_ms') - med('ctxgate', 'p50_ms'),
        responses_added_p99_ms: med('ctxgate_responses', 'p99_ms') - med('ctxgate', 'p99_ms'),
        cpu: await measureIngressCpu(BENCH_MODEL),
      };
      const c = res.ingress.cpu;
      log(
        `adapter CPU per call, ${c.body_chars}-char session body (request + answer translation): chat ${c.chat_us.toFixed(0)} us, ` +
          `Anthropic ${c.anthropic_us.toFixed(0)} us (+${(c.anthropic_us - c.chat_us).toFixed(0)}), Responses ${c.responses_us.toFixed(0)} us (+${(c.responses_us - c.chat_us).toFixed(0)})`,
      );
      log('');
    }

    if (opts.only === undefined || opts.only === 'fixed') {
      const targets: [Target, string][] = [
        ['direct', upstream],
        ['bare_proxy', urls.bare],
        ['ctxgate_passthrough', urls.ctxgate],
      ];
      log(`fixed bodies, ${connections} connections (ctxgate: layout passthrough, a labelled extra):`);
      for (const tokens of [1000, 16000]) {
        for (const stream of [false, true]) {
          const body = chatBody(tokens, stream);
          for (const [target, url] of targets) {
            await measure(
              {
                name: `${target} ${tokens / 1000}k ${stream ? 'stream' : 'non-stream'}`,
                traffic: 'fixed',
                target,
                tokens,
                stream,
                connections,
              },
              url,
              body,
            );
          }
        }
      }
      const pick = (t: Target) =>
        cases.find((c) => c.traffic === 'fixed' && c.target === t && c.tokens === 16000 && !c.stream)!;
      const bare = pick('bare_proxy');
      const gw = pick('ctxgate_passthrough');
      res.fixed = {
        added_p50_ms: gw.p50_ms - bare.p50_ms,
        added_p99_ms: gw.p99_ms - bare.p99_ms,
        throughput_ratio_vs_bare_proxy: bare.rps > 0 ? gw.rps / bare.rps : 0,
        cpu_ms_per_req: { passthrough: gw.cpu_ms_per_req, bare_proxy: bare.cpu_ms_per_req },
      };
    }
    return res;
  } finally {
    for (const stop of stops) await stop();
  }
}

export const help = `ctxgate bench overhead [--json] [--duration S] [--c1-calls N] [--connections N] [--sessions N] [--only growing|ingress|fixed] [--no-portkey] [--never-caching-upstream] [--cpu-prof DIR] [--gateway-node-flags=FLAGS]

What ctxgate adds over a zero-latency upstream, beside a bare @fastify/http-proxy and the Portkey
gateway (@portkey-ai/gateway), in one run. Growing agent sessions (--sessions concurrent, each call
one ~550-token tool output longer, ~1k to ~17k tokens, a new session after 30 calls), non-stream,
through ctxgate's default pipeline (layout ctxgate, qwen3 tokenizer, policy ctxgate) on 1
connection (latency) and ${THROUGHPUT_CONNECTIONS} (throughput); the gateway's time per request by stage; then
fixed ~1k/~16k-token bodies, stream and not, through ctxgate passthrough (a labelled extra).
Ingress: the same growing sessions as Anthropic Messages (/v1/messages) and OpenAI Responses
(/v1/responses, store: false) bodies beside chat, 1 connection (target: <= 0.3 ms added p50).
Targets: growing, 1 connection: added p50 <= 1 ms and p99 <= 5 ms over direct; ${THROUGHPUT_CONNECTIONS}
connections: req/s >= Portkey's, judged on ${THROUGHPUT_ROUNDS} paired rounds: after the ${THROUGHPUT_CONNECTIONS}-connection
rows, ctxgate and Portkey take turns for ${DEFAULT_DURATION_S} s each on the same session generator (fresh
sessions each run), the order flipping each round; the verdict is the median over balanced pairs of
rounds (one ctxgate-first, one Portkey-first) of the geometric mean of their two ratios, so an order
effect cancels (one pair of short runs moved the ratio 0.75-1.23x between runs of the bench on 2 shared
cores); only 2xx answers count as throughput there; each round prints both req/s and CPU per request.
Each proxied run also reports its process's CPU per request (user +
system from /proc; wall clock on a loaded host counts waiting for a core, CPU time does not), and
ctxgate's requests per second per core (1000 / its CPU ms per request at ${THROUGHPUT_CONNECTIONS} connections);
\`(main X)\` is the part on the process's main thread (the rest: V8's GC helper threads, libuv's pool,
render threads), \`gc S+M Y ms/req\` the gateway process's scavenges, mark-compacts and main-thread GC
pauses over the run.
The upstream reports cached_tokens as vLLM's prefix cache would (a model of it over the reference
worker's tokenizer, qwen3: loadtest/fake-upstream-cache.ts); --never-caching-upstream makes it report 0
on every call (a worker that never caches), as the bench did before.
The bare proxy, ctxgate and Portkey each run in their own process, all started with the gateway
image's Node flags (${GATEWAY_NODE_FLAGS.join(' ')}: a generic V8 GC knob, not ctxgate code), so the
three proxies are compared like for like and no row carries another's GCs.
Warm-up: before each measured run its target gets calls in chunks of ${WARMUP_CHUNK_CALLS}, at least ${WARMUP_MIN_CHUNKS} (V8's
optimising compiler runs for ~4,000 calls), until the CPU per call of its process (all threads: V8 compiles on helper
threads) was within ${WARMUP_SETTLED_BAND * 100} % of its lowest chunk for ${WARMUP_SETTLED_RUN} chunks in a row, at most ${WARMUP_MAX_CHUNKS} chunks or
${WARMUP_MAX_S} s (then "(bound)"; "(floor)": warm at the minimum); direct's process is the upstream. Each row prints
\`warm N calls a→b µs/call\`: the chunks' CPU per call.
Each growing 1-connection row sends --c1-calls calls (default ${DEFAULT_C1_CALLS}; 0: --duration seconds, as
the other rows), so its p99 is the ~${DEFAULT_C1_CALLS / 100}th slowest call of every target alike (a 3-s row gave
ctxgate ~1,000-1,300 calls: a p99 of the ~10th slowest, which one stall moves). p99 and p99.9 (#k/N):
the k-th slowest of the row's N calls; a p99.9 is a handful of calls, not an estimate of a tail.
\`upstream cpu\` is the fake upstream's own CPU per request: it shares the host's cores with the
target, so where it is large the req/s ratios are pulled toward 1; compare CPU per request there.
Slow calls: after the stage table, the 1-connection run's slowest ${SLOW_CALLS_SHARE * 100} % of calls beside its middle ones:
their wall time split into the gateway's timed stages, GC pauses (a pause inside a stage's section is
GC, not the stage: where such pauses fell is listed) and the rest (HTTP, upstream, hops, waiting for
a core), the gateway's CPU per call (which waiting does not inflate), the share that were a
session's first call, and the stages that grew most. The fake upstream runs with --trace (each
request's span, its GC pauses) and this process records its own GC pauses (it is the load
generator: a pause stops the clock that reads every latency), so the rest is split further into the
upstream's handling (its GC among it) and the load generator's pauses, where the gateway's sections
and pauses do not already count; direct's own slowest and middle calls get the same split.
--cpu-prof DIR writes a V8 CPU profile of ctxgate's process.
--gateway-node-flags="--min-semi-space-size=64 ..." starts ctxgate's process with these Node/V8 flags after
the image's (V8 takes a flag's last value), the other proxies without: an A/B of a GC setting is this
bench run with and without them, alternating (base, flags, flags, base), compared row by row.
Several minutes with the defaults (${DEFAULT_DURATION_S} s per run, each after its warm-up). Absolute figures depend on the machine and
its load; compare the ratios from one run.`;

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
