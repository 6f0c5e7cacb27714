// `bench overhead`'s growing-session rows, the ones the targets are judged on: growing agent
// sessions (growing-sessions.ts) directly, through the bare proxy, Portkey and ctxgate's default
// pipeline, at 1 connection (latency: --c1-calls calls a row) and THROUGHPUT_CONNECTIONS (throughput),
// each target's sessions primed first; ctxgate's 1-connection row with its stage times, its slow and
// tail calls beside direct's (the gateway's laps and GC pauses, the upstream's spans, this process's
// pauses); then ctxgate and Portkey in paired rounds at THROUGHPUT_CONNECTIONS (throughput-rounds.ts).
import { STAGE_TRACE_MAX, type StageTime, type StageTrace } from '../../middleware/perf/stage-timers.ts';
import type { GcEvent } from './gc-pauses.ts';
import {
  type CriticalPath,
  directCriticalPath,
  formatCriticalPath,
  type GatewayPath,
  gatewayCriticalPath,
} from './critical-path.ts';
import { cpuSplit } from './format-case.ts';
import { GrowingTraffic } from './growing-sessions.ts';
import { load, primeSessions, rankFromSlowest, startPortkey, type Portkey } from './load.ts';
import { type BenchRun, measure } from './measure.ts';
import { BENCH_MODEL } from './models.ts';
import { portkeyNodeArgs } from './node-args.ts';
import { processCpuMs } from './proc-cpu.ts';
import { THROUGHPUT_CONNECTIONS, type OverheadCase, type Target } from './result.ts';
import {
  formatGcInSections,
  formatSlowCalls,
  gcInSections,
  type Outside,
  SLOW_CALLS_SHARE,
  slowCallBreakdown,
  type SlowCalls,
} from './slow-calls.ts';
import { formatStageTable, perRequest, untimedMs } from './stage-table.ts';
import { formatTailCalls, type TailCalls, tailCalls } from './tail-calls.ts';
import {
  formatRounds,
  pairedRounds,
  type PairedTarget,
  type RoundRun,
  type ThroughputRounds,
} from './throughput-rounds.ts';

/** The calls a percentile of ctxgate's and direct's 1-connection rows was read from, and its rank. */
function callsBehind(
  gw: OverheadCase,
  direct: OverheadCase,
  q: number,
): { ctxgate: number; ctxgate_rank: number; direct: number; direct_rank: number } {
  const [g, d] = [gw.requests ?? 0, direct.requests ?? 0];
  return { ctxgate: g, ctxgate_rank: rankFromSlowest(g, q), direct: d, direct_rank: rankFromSlowest(d, q) };
}

export async function runGrowingRows(run: BenchRun, noPortkey: boolean | undefined): Promise<void> {
  const { up, px, upstream, urls, sessions, durationS, c1Calls, cases, res, log, loadgenGc, stops } = run;
  let portkey: Portkey | undefined;
  if (!noPortkey) {
    portkey = await startPortkey(upstream, portkeyNodeArgs());
    run.portkeyPid = portkey.pid;
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
  let gwPath: CriticalPath | undefined;
  let directPath: CriticalPath | undefined;
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
        run,
        { name: `${target} growing c${conns}`, traffic: 'growing', target, stream: false, connections: conns },
        url,
        () => {
          const b = traffic.next();
          callNo.push(traffic.lastCall);
          return b;
        },
        {
          headers,
          before: async () => {
            if (isGw) await px.ask('reset');
            if (traced) await up.ask('reset');
            runStart = performance.timeOrigin + performance.now();
            callNo.length = 0;
          },
          keepCalls: traced,
          amount: conns === 1 && c1Calls > 0 ? c1Calls : undefined,
        },
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
        directPath = directCriticalPath(r.calls, out.upstream?.spans ?? [], runStart);
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
          const gp = JSON.parse(await px.ask('path')) as GatewayPath;
          gwPath = gatewayCriticalPath(r.calls, gp, out.upstream?.spans ?? [], runStart);
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
      const cpu = cpu0 !== undefined && cpu1 !== undefined && r.requests > 0 ? (cpu1 - cpu0) / r.requests : undefined;
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
    ...(gwPath && directPath ? { critical_path: { ctxgate: gwPath, direct: directPath } } : {}),
  };
  log('');
  log(formatStageTable(res.growing.stages, gw1.cpu_main_ms_per_req));
  if (stagesGc) log(formatGcInSections(stagesGc, gwRequests));
  if (slowCalls) log(formatSlowCalls(slowCalls, undefined, directSlow));
  if (tail) log(formatTailCalls('ctxgate', tail, { gateway: true, middleCpuMs: slowCalls?.middle.cpu_ms }));
  if (directTail) log(formatTailCalls('direct', directTail, { gateway: false }));
  if (gwPath) log(formatCriticalPath('ctxgate', gwPath));
  if (directPath) log(formatCriticalPath('direct', directPath));
  log('');
}
