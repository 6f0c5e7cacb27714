// ctxgate bench chaos: reference workers (child processes) behind ctxgate (child process) under
// concurrent synthetic agent sessions, half streaming, while faults hit on a schedule: a worker
// killed -9 and restarted on the same port, a worker hanging before the first byte, a worker
// dying mid-stream, 5xx bursts, and (--redis) Redis killed for 10 s. Reports outcomes by kind,
// retries, p99 latency, and the gateway's RSS and open sockets before and after (after a settle
// and a GC), so leaks and hangs show. The gateway runs the default pipeline (layout ctxgate, the
// workers' tokenizer, policy ctxgate); with --redis its sessions, shared routing index and usage
// ledger live in Redis, through the outage. --layout passthrough is a labelled extra.
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { GATEWAY_NODE_FLAGS } from '../gateway/node-flags.ts';
import { formatTimeline, startGateTimeline } from './chaos/gate-timeline.ts';
import { generateSessions } from './synth/index.ts';
import { benchLog, parseOrUsage } from './chaos/bench-cli.ts';
import { FAULT_KINDS, faultSchedule } from './chaos/faults.ts';
import { ChaosFleet } from './chaos/fleet.ts';
import { gatewayConfig, MODEL, TOKENIZER } from './chaos/gateway-config.ts';
import { startGatewayProc, type GatewayProc } from './chaos/gateway-proc.ts';
import { mallocAccountLine, mallocTrim } from './chaos/malloc-trim.ts';
import { DEFAULTS, parseChaosArgs } from './chaos/options.ts';
import { procMemory } from './chaos/proc-memory.ts';
import { memLine, procLine, type Reading, settled } from './chaos/reading.ts';
import { type ChaosReport, printTable, roundFigures, rssBackOf } from './chaos/report.ts';
import { rssParts } from './chaos/rss-parts.ts';
import { emptyStats, percentile, runLoad, type LoadStats } from './chaos/load.ts';
import { freePort, RedisProc } from './chaos/redis-proc.ts';
import {
  CHAOS_WARMUP_MAX_ROUNDS,
  CHAOS_WARMUP_MIN_ROUNDS,
  CHAOS_WARMUP_ROUND_MS,
  CHAOS_WARMUP_SETTLED_GROWTH,
  CHAOS_WARMUP_SETTLED_ROUNDS,
  chaosWarmUpDone,
} from './chaos/warm-up.ts';

export { type ChaosLayout, DEFAULTS, type DispatchChoice, gatewayEnvOf, parseChaosArgs } from './chaos/options.ts';
export { FAULT_KINDS, type FaultKind, type FaultOp, faultSchedule, faultsOf } from './chaos/faults.ts';
export { gatewayConfig } from './chaos/gateway-config.ts';
export type { ChaosReport, RoundFigures } from './chaos/report.ts';

/** Worker sleep = modeled engine time × this: streams last ~a second, as with a real engine. */
const TIME_SCALE = 0.3;
const MAX_TOKENS = 48;
/** A stream with no byte for this long counts as hung (the gateway's body timeout is below it). */
const IDLE_TIMEOUT_MS = 15_000;
/** Past the upstream pools' keep-alive (30 s): idle pooled sockets are gone, leaked ones are not. */
const IDLE_SETTLE_MS = 32_000;
/** Longer than V8's allocation-throughput window (5 s) that decides whether a GC shrinks the young
 *  generation, and than its memory reducer's timer (8 s) that a full GC arms. */
export const CHAOS_QUIET_AFTER_GC_MS = 10_000;

export const help = `ctxgate bench chaos [--duration-s N] [--sessions N] [--workers N] [--kill-every-s N] [--redis] [--layout ctxgate|passthrough] [--heap-snapshots DIR] [--faults LIST] [--dispatch arrival|admission] [--release-ms-per-token N] [--rounds N] [--gateway-env K=V,…] [--trim-probe] [--json]

Runs --workers reference workers (child processes) behind ctxgate (child process) and
--sessions concurrent synthetic agent sessions (half the calls streaming) for --duration-s
seconds, injecting faults every --kill-every-s seconds: one worker killed -9 and restarted on
its port, then in turn a worker hanging before its first byte, a worker dying mid-stream, or a
burst of 503s. The gateway process starts with the deployed Node flags (as the image and bench
overhead: ${GATEWAY_NODE_FLAGS.join(' ')}). The gateway runs the default pipeline: layout ctxgate, the qwen3 tokenizer, policy
ctxgate (--layout passthrough: no tokenizer, round_robin, a labelled extra). --redis also starts a
redis-server that holds the gateway's sessions, shared routing index, usage ledger and rate
limiter, and kills it for 10 s mid-run. Reports sent / succeeded / failures by kind / streams ended with the SSE error
event / hung streams / retries / p99 latency / gateway RSS and heap (after warm-up vs after the run, and whether RSS is back within 10 % of the start, #17's target;
each after a GC; the session store is capped at --sessions sessions, one per client loop; the
warm-up runs rounds of ${CHAOS_WARMUP_ROUND_MS / 1000} s at full concurrency, each with its own sessions, until the heap
after a GC grew by less than ${CHAOS_WARMUP_SETTLED_GROWTH * 100} % over the last ${CHAOS_WARMUP_SETTLED_ROUNDS} rounds (${CHAOS_WARMUP_MIN_ROUNDS} to ${CHAOS_WARMUP_MAX_ROUNDS} rounds, each printed), so
the bounded caches are as full as this traffic fills them and their fill is not counted as growth;
both readings come after ${IDLE_SETTLE_MS / 1000} s at rest, then a GC and ${CHAOS_QUIET_AFTER_GC_MS / 1000} s of quiet before the GC
whose reading counts, as V8 gives committed heap back only after idle time; the young generation's
committed size is printed beside the heap) and open sockets (at rest before the load vs at rest 32 s after it, once
pooled keep-alive sockets expired) so leaks show. --heap-snapshots DIR writes a V8 heap snapshot of
the gateway after the warm-up reading and after the end reading (compare them in Chrome DevTools'
Memory tab, or with loadtest/chaos/heap-diff.ts); writing one costs the gateway hundreds of MB of
RSS it keeps, so RSS figures of such a run are not comparable. A snapshot holds the gateway's
whole memory unredacted (every prompt, key and session state it held): the files are written 0600;
keep them on the machine, and never take them from a gateway serving real traffic. Each hung call is listed with
what the gateway's request record says its attempts did. Each reading also splits the gateway's RSS
by kind of mapping (/proc/PID/smaps): brk (the main thread's malloc heap), glibc's other malloc
arenas, other anonymous memory (V8's pages), files. --trim-probe: after the end reading, calls
malloc_trim(0) in the gateway through gdb (Linux, gdb installed, ptrace allowed) and reads the
mappings again: what brk loses then was free memory glibc kept resident, not memory held live.
--rounds N: the fault schedule N times over (Redis killed once a round with --redis), each round
followed by the at-rest reading; a leak grows the readings round after round, a cache's fill or the
allocator's high-water mark stops after the first (each round's reading printed). The RSS change
from the start reading to the end one is printed by part: the main JS heap live, the main JS heap
committed but free after the GC, other anonymous memory (render threads' heaps, stacks), the malloc
heaps (brk and arenas; with --trim-probe, how much of them was free memory glibc kept), files.
--gateway-env 'NAME=VALUE,…': environment variables for the gateway process alone (its workers and
Redis keep the bench's), e.g. an allocator to measure: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
or MALLOC_ARENA_MAX=2 (the mappings line says which malloc the gateway runs).
--faults LIST (comma-separated, of ${FAULT_KINDS.join(', ')}; default all): only those kinds, at
the times the full schedule has them (a run per kind bisects the full one). --dispatch and
--release-ms-per-token set the model's dispatch and admission.release_ms_per_token (default: the
reference workers' engine default, vllm: the admission gate in release order); --dispatch arrival
is the default for SGLang and OpenAI-compatible upstreams, --release-ms-per-token 0 the gate in
arrival order.
Defaults: --duration-s ${DEFAULTS.durationS} --sessions ${DEFAULTS.sessions} --workers ${DEFAULTS.workers} --kill-every-s ${DEFAULTS.killEveryS} --rounds ${DEFAULTS.rounds}`;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export async function run(argv: string[]): Promise<number> {
  const o = parseOrUsage('bench chaos', help, argv, parseChaosArgs);
  if (o === 2) return 2;
  const log = benchLog(o.json);
  const fleet = new ChaosFleet({ model: MODEL, tokenizer: TOKENIZER, timeScale: TIME_SCALE });
  const redis = o.redis ? new RedisProc(await freePort()) : undefined;
  let gw: GatewayProc | undefined;
  const faults: string[] = [];
  const timers: NodeJS.Timeout[] = [];
  try {
    log(`starting ${o.workers} workers${redis ? ' and redis' : ''}...`);
    await fleet.start(o.workers);
    await redis?.start();
    const dir = mkdtempSync(join(tmpdir(), 'ctxgate-chaos-'));
    const cfg = join(dir, 'gateway.yaml');
    writeFileSync(
      cfg,
      gatewayConfig(fleet.urls(), dir, redis?.url, o.layout, o.sessions, {
        dispatch: o.dispatch,
        releaseMsPerToken: o.releaseMsPerToken,
      }),
    );
    if (o.heapSnapshots) mkdirSync(o.heapSnapshots, { recursive: true, mode: 0o700 }); // a new folder: private
    gw = await startGatewayProc(cfg, [], o.heapSnapshots && resolve(o.heapSnapshots), undefined, o.gatewayEnv);
    const snapshots: string[] = [];
    const snapshot = async (what: string): Promise<void> => {
      if (!o.heapSnapshots || !gw) return;
      const f = await gw.heapSnapshot();
      if (f) snapshots.push(f);
      log(f ? `heap snapshot ${what}: ${f}` : `heap snapshot ${what}: none written in time`);
    };
    const sessions = generateSessions({ count: Math.min(o.sessions, 16), minCalls: 6, maxCalls: 16, model: MODEL });

    // Sockets at rest: listener, health checks, stdio. The end reading waits until pooled
    // keep-alive sockets expired, so both are "at rest" and any difference is a leak.
    await sleep(1_000);
    const socketsStart = gw.sockets();
    const cold = await settled(gw, 0);
    // RSS after a warm-up at full concurrency, so "start" is a warm process, not an empty one:
    // rounds until the heap after GC stops growing (chaos/warm-up.ts), so the bounded caches are
    // as full as this traffic fills them and later growth is not their fill.
    const warmHeaps: number[] = [];
    let start: Reading;
    let warm: boolean | undefined;
    do {
      await runLoad({
        url: gw.url,
        model: MODEL,
        sessions,
        concurrency: o.sessions,
        untilMs: Date.now() + CHAOS_WARMUP_ROUND_MS,
        idleTimeoutMs: IDLE_TIMEOUT_MS,
        maxTokens: MAX_TOKENS,
        stats: emptyStats(),
        idPrefix: `warmup${warmHeaps.length}`,
      });
      start = await settled(gw);
      // an unreadable heap (NaN) never settles: the rounds' bound ends it
      warmHeaps.push(start.memory?.heapUsed ?? Number.NaN);
      log(`warm-up round ${warmHeaps.length}: ${memLine(start)}`);
      warm = chaosWarmUpDone(warmHeaps);
    } while (warm === undefined);
    // The start reading at rest as long as the end one: V8 gives back committed heap (its memory
    // reducer) only after some idle time, so an RSS read right after load beside one read after
    // 32 s at rest differs by tens of MB either way without any leak.
    log(`warm-up done; ${IDLE_SETTLE_MS / 1000} s at rest before the start reading (as before the end one)`);
    start = await settled(gw, IDLE_SETTLE_MS, CHAOS_QUIET_AFTER_GC_MS);
    log(
      `gateway memory (MB) before load: ${memLine(cold)}; after warm-up (${warmHeaps.length} rounds, heap ` +
        `${warm ? `grew < ${CHAOS_WARMUP_SETTLED_GROWTH * 100} % over the last ${CHAOS_WARMUP_SETTLED_ROUNDS}` : 'still growing: bound reached'}) and ${IDLE_SETTLE_MS / 1000} s at rest: ${memLine(start)}`,
    );
    log(
      `gateway pid ${gw.pid}: ${socketsStart} sockets at rest, rss ${start.rss.toFixed(1)} MB after warm-up; chaos for ${o.durationS} s`,
    );
    await snapshot('after warm-up');

    // Rounds of the fault schedule, each ended by an at-rest reading: a leak grows the reading
    // round after round, a fill or the allocator's high-water mark stops growing after the first.
    const stats: LoadStats = emptyStats();
    const roundEnds: Reading[] = [];
    const timelines: string[] = [];
    for (let round = 1; round <= o.rounds; round++) {
      const tag = o.rounds > 1 ? `round ${round}: ` : '';
      const t0 = Date.now();
      const at = (ms: number, what: string, f: () => unknown): void => {
        timers.push(
          setTimeout(() => {
            faults.push(`${tag}${((Date.now() - t0) / 1000).toFixed(1)}s ${what}`);
            log(`  ${faults[faults.length - 1]}`);
            void Promise.resolve(f()).catch((err: Error) => log(`  fault step failed: ${err.message}`));
          }, ms),
        );
      };
      for (const step of faultSchedule(o.durationS, o.killEveryS, o.workers, o.faults, !!redis)) {
        const op = step.op;
        at(step.atMs, step.what, () =>
          op.kind === 'kill'
            ? fleet.kill(op.worker)
            : op.kind === 'restart'
              ? fleet.restart(op.worker)
              : op.kind === 'fault'
                ? fleet.setFault(op.worker, op.fault)
                : op.kind === 'redis-kill'
                  ? redis?.kill()
                  : redis?.start(),
        );
      }
      const hungBefore = stats.hung.length;
      const timeline = startGateTimeline(gw.url, t0);
      await runLoad({
        url: gw.url,
        model: MODEL,
        sessions,
        concurrency: o.sessions,
        untilMs: t0 + o.durationS * 1000,
        idleTimeoutMs: IDLE_TIMEOUT_MS,
        maxTokens: MAX_TOKENS,
        stats,
        ...(round > 1 ? { idPrefix: `chaos${round}` } : {}),
      });
      for (const t of timers) clearTimeout(t);
      timers.length = 0;
      const ticks = timeline.stop();
      const hung = stats.hung.slice(hungBefore);
      if (hung.length)
        timelines.push(
          ...(tag ? [tag] : []),
          ...formatTimeline(
            ticks,
            Math.min(...hung.map((h) => h.startS)) * 1000 - 2_000,
            Math.max(...hung.map((h) => h.startS)) * 1000 + IDLE_TIMEOUT_MS + 1_000,
          ),
        );
      // Every worker back (and Redis up) before the reading, so pools look like they did at the start.
      if (redis && !redis.running) await redis.start();
      for (let i = 0; i < o.workers; i++) {
        fleet.setFault(i, { hangMs: 0, dieAfterChunks: 0, failRate: 0 });
        await fleet.restart(i);
      }
      log(`${tag}load done; waiting ${IDLE_SETTLE_MS / 1000} s for keep-alive sockets to expire before the reading`);
      const r = await settled(gw, IDLE_SETTLE_MS, CHAOS_QUIET_AFTER_GC_MS);
      roundEnds.push(r);
      if (round < o.rounds) log(`gateway memory (MB) after round ${round}: ${memLine(r)}`);
    }
    const end = roundEnds[roundEnds.length - 1];
    log(`gateway memory (MB) at the end: ${memLine(end)}`);
    await snapshot('at the end');
    let trim: ChaosReport['trim_probe'];
    if (o.trimProbe) {
      const t = await mallocTrim(gw.pid);
      await sleep(500);
      trim = { ...t, proc: procMemory(gw.pid) };
      log(
        t.ok
          ? `${t.before ? `glibc before it (MB): ${mallocAccountLine(t.before)}; ` : ''}after malloc_trim(0) in the gateway (released ${t.released}): rss ${gw.rssMb().toFixed(1)}${trim.proc ? `; ${procLine(trim.proc)}` : ''}`
          : `malloc_trim probe failed: ${t.error}`,
      );
    }
    const parts = rssParts(start, end, trim?.ok ? trim.proc : undefined);
    const exitCode = await gw.stop();
    gw = undefined;
    const report: ChaosReport = {
      layout: o.layout,
      redis: o.redis,
      ...(Object.keys(o.gatewayEnv).length ? { gateway_env: o.gatewayEnv } : {}),
      duration_s: o.durationS,
      sent: stats.sent,
      succeeded: stats.succeeded,
      failed_nonstream: stats.failedNonstream,
      failed_stream_clean: stats.failedStreamClean,
      failed_stream_unclean: stats.failedStreamUnclean,
      failed_stream_http: stats.failedStreamHttp,
      hung_streams: stats.hungStreams,
      retries: stats.retries,
      p99_ms: Math.round(percentile(stats.latenciesMs, 99)),
      p50_ms: Math.round(percentile(stats.latenciesMs, 50)),
      warmup: { rounds: warmHeaps.length, heap_used_mb: warmHeaps, settled: warm },
      rss_start_mb: Number(start.rss.toFixed(1)),
      rss_end_mb: Number(end.rss.toFixed(1)),
      rss_back: rssBackOf(start.rss, end.rss, IDLE_SETTLE_MS / 1000, CHAOS_QUIET_AFTER_GC_MS / 1000),
      memory_cold: cold.memory,
      memory_start: start.memory,
      memory_end: end.memory,
      proc_start: start.proc,
      proc_end: end.proc,
      ...(o.rounds > 1 ? { rounds: roundEnds.map((r) => roundFigures(start, r)) } : {}),
      ...(parts ? { rss_parts: parts } : {}),
      ...(trim ? { trim_probe: trim } : {}),
      ...(o.heapSnapshots ? { heap_snapshots: snapshots } : {}),
      sockets_start: socketsStart,
      sockets_end: end.sockets,
      failures_by_kind: stats.failuresByKind,
      hung_calls: stats.hung,
      ...(timelines.length ? { gate_timeline: timelines } : {}),
      faults,
      gateway_exit_code: exitCode,
    };
    if (o.json) process.stdout.write(JSON.stringify(report, null, 2) + '\n');
    else printTable(report);
    return 0;
  } finally {
    for (const t of timers) clearTimeout(t);
    await gw?.stop().catch(() => undefined);
    await fleet.close();
    await redis?.kill();
  }
}
