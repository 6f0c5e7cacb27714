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
import type { FaultConfig } from './sim-worker/faults.ts';
import { formatTimeline, startGateTimeline } from './chaos/gate-timeline.ts';
import { generateSessions } from './synth/index.ts';
import { benchLog, parseOrUsage, readOptions } from './chaos/bench-cli.ts';
import { ChaosFleet } from './chaos/fleet.ts';
import { startGatewayProc, type GatewayProc, type MemoryMb } from './chaos/gateway-proc.ts';
import { mallocTrim, type TrimResult } from './chaos/malloc-trim.ts';
import type { ProcMemoryMb } from './chaos/proc-memory.ts';
import { procMemory } from './chaos/proc-memory.ts';
import { memLine, procLine, type Reading, settled } from './chaos/reading.ts';
import { type RssParts, rssParts, rssPartsLine } from './chaos/rss-parts.ts';
import { emptyStats, type HungCall, percentile, runLoad, type LoadStats } from './chaos/load.ts';
import { freePort, RedisProc } from './chaos/redis-proc.ts';
import {
  CHAOS_WARMUP_MAX_ROUNDS,
  CHAOS_WARMUP_MIN_ROUNDS,
  CHAOS_WARMUP_ROUND_MS,
  CHAOS_WARMUP_SETTLED_GROWTH,
  CHAOS_WARMUP_SETTLED_ROUNDS,
  chaosWarmUpDone,
} from './chaos/warm-up.ts';

export const DEFAULTS = { durationS: 60, sessions: 50, workers: 4, killEveryS: 10, rounds: 1 } as const;
const MODEL = 'chaos-model';
/** The workers' tokenizer, and the gateway's for the default pipeline. */
const TOKENIZER = 'qwen3';
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
const RESTART_AFTER_MS = 2_000;
const FAULT_MS = 3_000;
const REDIS_DOWN_MS = 10_000;

/** The fault kinds of the schedule; --faults keeps a subset at the same times (the others skipped),
 *  so a run per kind bisects what the full schedule does. */
export const FAULT_KINDS = ['kill', 'hang', 'die-mid-stream', '5xx-burst', 'redis'] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

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
event / hung streams / retries / p99 latency / gateway RSS and heap (after warm-up vs after the run,
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

export interface ChaosReport {
  /** The gateway's pipeline: ctxgate (the default) or passthrough (a labelled extra). */
  layout: ChaosLayout;
  /** Sessions, routing index, ledger and rate limiter in Redis (killed mid-run). */
  redis: boolean;
  /** --gateway-env: variables set for the gateway process alone. */
  gateway_env?: Record<string, string>;
  duration_s: number;
  sent: number;
  succeeded: number;
  failed_nonstream: number;
  failed_stream_clean: number;
  failed_stream_unclean: number;
  failed_stream_http: number;
  hung_streams: number;
  retries: number;
  p99_ms: number;
  p50_ms: number;
  rss_start_mb: number;
  rss_end_mb: number;
  /** With --heap-snapshots: the gateway's heap snapshots after warm-up and at the end. */
  heap_snapshots?: string[];
  /** Warm-up rounds run before the start reading, the heap used after each one's GC (MB), and
   *  whether it stopped growing (false: the rounds' bound ended it). */
  warmup?: { rounds: number; heap_used_mb: number[]; settled: boolean };
  /** The gateway's main-thread memoryUsage() after each GC (MB): before load, after warm-up, at the end. */
  memory_cold?: MemoryMb;
  memory_start?: MemoryMb;
  memory_end?: MemoryMb;
  /** The gateway's RSS by kind of mapping (brk: the main thread's malloc heap) and its threads by
   *  name at the start and end readings (loadtest/chaos/proc-memory.ts). */
  proc_start?: ProcMemoryMb;
  proc_end?: ProcMemoryMb;
  /** --rounds N (N > 1): the at-rest reading after each round (the last is the end reading). */
  rounds?: RoundFigures[];
  /** The RSS change from the start reading to the end one by part (chaos/rss-parts.ts). */
  rss_parts?: RssParts;
  /** --trim-probe: malloc_trim(0) in the gateway after the end reading, and the mappings after it. */
  trim_probe?: TrimResult & { proc?: ProcMemoryMb };
  sockets_start: number;
  sockets_end: number;
  failures_by_kind: Record<string, number>;
  /** Calls with no byte for the idle timeout: when they started (s into the chaos) and what the
   *  gateway's record says their attempts did (first 50). */
  hung_calls: HungCall[];
  /** With hung calls: the gate and each worker as the gateway saw them, from 2 s before the first
   *  hung call started to 16 s after the last (chaos/gate-timeline.ts). */
  gate_timeline?: string[];
  faults: string[];
  gateway_exit_code: number | null;
}

export type ChaosLayout = 'ctxgate' | 'passthrough';

/** One round's at-rest reading, in MB: RSS, the main JS heap in use and committed, the malloc heaps. */
export interface RoundFigures {
  rss_mb: number;
  heap_used_mb?: number;
  heap_total_mb?: number;
  malloc_mb?: number;
  parts?: RssParts;
}

function roundFigures(start: Reading, r: Reading): RoundFigures {
  const parts = rssParts(start, r);
  return {
    rss_mb: Number(r.rss.toFixed(1)),
    ...(r.memory ? { heap_used_mb: r.memory.heapUsed, heap_total_mb: r.memory.heapTotal } : {}),
    ...(r.proc ? { malloc_mb: Math.round((r.proc.brk + r.proc.arenas) * 10) / 10 } : {}),
    ...(parts ? { parts } : {}),
  };
}

export type FaultOp =
  | { kind: 'kill' | 'restart'; worker: number }
  | { kind: 'fault'; worker: number; fault: Partial<FaultConfig> }
  | { kind: 'redis-kill' | 'redis-start' };

/** The chaos's fault steps, ms from its start (pure; run() sets a timer per step). Every
 *  killEveryS: a worker killed -9 at 30 % of the period and restarted RESTART_AFTER_MS later, then
 *  at 60 % another worker hangs, dies mid-stream or answers 503 (in turn) for FAULT_MS; with Redis,
 *  Redis killed at 40 % of the run for REDIS_DOWN_MS. `faults` keeps only those kinds, same times. */
export function faultSchedule(
  durationS: number,
  killEveryS: number,
  workers: number,
  faults: ReadonlySet<FaultKind> = new Set(FAULT_KINDS),
  redis = false,
): { atMs: number; what: string; op: FaultOp }[] {
  const steps: { atMs: number; what: string; op: FaultOp }[] = [];
  const period = killEveryS * 1000;
  const kinds = ['hang', 'die-mid-stream', '5xx-burst'] as const;
  for (let c = 0, base = 0; base + period * 0.3 < durationS * 1000; c++, base += period) {
    const victim = c % workers;
    if (faults.has('kill')) {
      steps.push({ atMs: base + period * 0.3, what: `kill -9 w${victim}`, op: { kind: 'kill', worker: victim } });
      steps.push({
        atMs: base + period * 0.3 + RESTART_AFTER_MS,
        what: `restart w${victim}`,
        op: { kind: 'restart', worker: victim },
      });
    }
    const other = (c + 1) % workers;
    const k = kinds[c % kinds.length];
    if (!faults.has(k) || workers < 2 || base + period * 0.6 + FAULT_MS > durationS * 1000) continue;
    const fault: Partial<FaultConfig> =
      k === 'hang'
        ? { hangMs: 8_000 }
        : k === 'die-mid-stream'
          ? { dieAfterChunks: 3 }
          : { failRate: 1, failStatus: 503 };
    const clear: Partial<FaultConfig> =
      k === 'hang' ? { hangMs: 0 } : k === 'die-mid-stream' ? { dieAfterChunks: 0 } : { failRate: 0 };
    steps.push({ atMs: base + period * 0.6, what: `${k} on w${other}`, op: { kind: 'fault', worker: other, fault } });
    steps.push({
      atMs: base + period * 0.6 + FAULT_MS,
      what: `${k} off w${other}`,
      op: { kind: 'fault', worker: other, fault: clear },
    });
  }
  if (redis && faults.has('redis')) {
    const downAt = Math.max(1000, durationS * 1000 * 0.4);
    steps.push({ atMs: downAt, what: 'kill -9 redis', op: { kind: 'redis-kill' } });
    steps.push({ atMs: downAt + REDIS_DOWN_MS, what: 'restart redis', op: { kind: 'redis-start' } });
  }
  return steps;
}

export function faultsOf(v: string | undefined): Set<FaultKind> {
  if (v === undefined) return new Set(FAULT_KINDS);
  const out = new Set<FaultKind>();
  for (const k of v.split(',').map((x) => x.trim())) {
    if (!(FAULT_KINDS as readonly string[]).includes(k))
      throw new Error(`--faults: ${k} is not one of ${FAULT_KINDS.join(', ')}`);
    out.add(k as FaultKind);
  }
  return out;
}

/** The gate as configured, when not the engine's default (vllm: the admission gate, release order):
 *  --dispatch arrival is what SGLang and plain OpenAI-compatible upstreams get by default (no gate),
 *  --release-ms-per-token 0 the gate in arrival order (the default before the release order). */
export interface DispatchChoice {
  dispatch?: 'arrival' | 'admission';
  releaseMsPerToken?: number;
}

/** The chaos gateway's config; its usage ledger lives in the run's temp dir, never in the cwd. */
export function gatewayConfig(
  urls: string[],
  dir: string,
  redisUrl?: string,
  layout: ChaosLayout = 'ctxgate',
  maxSessions: number = DEFAULTS.sessions,
  dispatch: DispatchChoice = {},
): string {
  const workers = urls.map((u, i) => `      - { url: '${u}', id: w${i} }`).join('\n');
  return [
    'listen: { host: 127.0.0.1, port: 0 }',
    // A generous health timeout: on a saturated box a busy worker answers /health slowly, and
    // ejecting every busy worker at once would fail calls (dead ones are ejected by requests).
    'health: { interval_ms: 500, timeout_ms: 2000, eject_after: 3, readmit_after: 1 }',
    // Fail fast on a dead or hanging worker and try the others: attempts = every worker.
    `upstream: { connect_timeout_ms: 500, headers_timeout_ms: 4000, body_timeout_ms: 6000, attempts: ${Math.max(2, urls.length)} }`,
    'shutdown: { deadline_ms: 5000 }',
    // A benchmark's records must not land in the user's default ledger (ctxgate-usage.sqlite).
    `ledger: { path: '${join(dir, 'usage.sqlite')}' }`,
    // Every loop round starts a new session and the store keeps each one for hours (up to
    // limits.max_session_bytes): RSS would grow with calls served until that cap, by design. Capped at
    // one session per loop, the store is full after the warm-up, so RSS growth past it is a leak.
    `limits: { max_sessions: ${maxSessions}${redisUrl ? ', rate_limit: { per_minute: 1000000 }' : ''} }`,
    ...(redisUrl ? [`redis: { url: '${redisUrl}' }`] : []),
    'models:',
    `  - name: ${MODEL}`,
    ...(layout === 'ctxgate'
      ? [
          '    layout: ctxgate',
          `    tokenizer: ${TOKENIZER}`,
          '    policy: ctxgate',
          ...(dispatch.dispatch ? [`    dispatch: ${dispatch.dispatch}`] : []),
          ...(dispatch.releaseMsPerToken === undefined
            ? []
            : [`    admission: { release_ms_per_token: ${dispatch.releaseMsPerToken} }`]),
        ]
      : ['    layout: passthrough', '    policy: round_robin']),
    '    workers:',
    workers,
    '',
  ].join('\n');
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** --gateway-env 'K=V,K2=V2': variables for the gateway process alone (not the workers, not Redis). */
export function gatewayEnvOf(v: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (v === undefined) return out;
  for (const kv of v.split(',')) {
    const eq = kv.indexOf('=');
    const k = kv.slice(0, eq).trim();
    if (eq <= 0 || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(k)) throw new Error(`--gateway-env: ${kv} is not NAME=VALUE`);
    out[k] = kv.slice(eq + 1);
  }
  return out;
}

function dispatchOf(v: string | undefined): DispatchChoice['dispatch'] {
  if (v === undefined || v === 'arrival' || v === 'admission') return v;
  throw new Error('--dispatch must be arrival or admission');
}

function layoutOf(v: string | undefined): ChaosLayout {
  if (v === undefined || v === 'ctxgate') return 'ctxgate';
  if (v === 'passthrough') return 'passthrough';
  throw new Error('--layout must be ctxgate or passthrough');
}

export function parseChaosArgs(argv: string[]) {
  const a = readOptions(
    argv,
    [
      'duration-s',
      'sessions',
      'workers',
      'kill-every-s',
      'layout',
      'heap-snapshots',
      'faults',
      'dispatch',
      'release-ms-per-token',
      'rounds',
      'gateway-env',
    ],
    ['redis', 'json', 'trim-probe'],
  );
  return {
    durationS: a.num('duration-s', DEFAULTS.durationS),
    sessions: a.int('sessions', DEFAULTS.sessions),
    workers: a.int('workers', DEFAULTS.workers),
    killEveryS: a.num('kill-every-s', DEFAULTS.killEveryS),
    rounds: a.int('rounds', DEFAULTS.rounds, 1),
    gatewayEnv: gatewayEnvOf(a.str('gateway-env')),
    dispatch: dispatchOf(a.str('dispatch')),
    releaseMsPerToken: a.str('release-ms-per-token') === undefined ? undefined : a.num('release-ms-per-token', 0, 0),
    redis: a.bool('redis'),
    layout: layoutOf(a.str('layout')),
    faults: faultsOf(a.str('faults')),
    heapSnapshots: a.str('heap-snapshots'),
    json: a.bool('json'),
    trimProbe: a.bool('trim-probe'),
  };
}

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
          ? `after malloc_trim(0) in the gateway (released ${t.released}): rss ${gw.rssMb().toFixed(1)}${trim.proc ? `; ${procLine(trim.proc)}` : ''}`
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

function printTable(r: ChaosReport): void {
  const pct = (a: number, b: number): string => (b ? `${(((a - b) / b) * 100).toFixed(1)}%` : 'n/a');
  const rows: [string, string][] = [
    [
      'gateway',
      `${r.layout === 'ctxgate' ? 'default pipeline (layout ctxgate, qwen3, policy ctxgate)' : 'layout passthrough, round_robin (labelled extra)'}${r.redis ? ', Redis-backed' : ''}; ${r.duration_s} s of faults${r.rounds ? ` x ${r.rounds.length} rounds` : ''}${
        r.gateway_env
          ? `; env ${Object.entries(r.gateway_env)
              .map(([k, v]) => `${k}=${v}`)
              .join(' ')}`
          : ''
      }`,
    ],
    ['sent', String(r.sent)],
    ['succeeded', String(r.succeeded)],
    ['failed (non-stream)', String(r.failed_nonstream)],
    ['streams ended with SSE error event', String(r.failed_stream_clean)],
    ['streams ended without [DONE] or error event', String(r.failed_stream_unclean)],
    ['streams refused with an HTTP error', String(r.failed_stream_http)],
    ['hung streams', String(r.hung_streams)],
    ['retries (x-ctxgate-attempts - 1)', String(r.retries)],
    ['latency p50 / p99 (ms)', `${r.p50_ms} / ${r.p99_ms}`],
    ['gateway RSS start → end (MB)', `${r.rss_start_mb} → ${r.rss_end_mb} (${pct(r.rss_end_mb, r.rss_start_mb)})`],
    ...(r.rounds
      ? ([
          [
            'after each round: RSS / heap used / malloc (MB)',
            r.rounds
              .map(
                (x) =>
                  `${x.rss_mb} (${pct(x.rss_mb, r.rss_start_mb)}) / ${x.heap_used_mb ?? '-'} / ${x.malloc_mb ?? '-'}`,
              )
              .join(', '),
          ],
        ] as [string, string][])
      : []),
    ...(r.rss_parts ? ([['RSS change by part (MB)', rssPartsLine(r.rss_parts)]] as [string, string][]) : []),
    ...(r.memory_start && r.memory_end
      ? ([
          [
            'gateway heap used / external start → end (MB)',
            `${r.memory_start.heapUsed} / ${r.memory_start.external} → ${r.memory_end.heapUsed} / ${r.memory_end.external}`,
          ],
        ] as [string, string][])
      : []),
    ...(r.proc_start && r.proc_end
      ? ([
          [
            'gateway RSS brk / arenas / anon / file start → end',
            `${r.proc_start.brk} / ${r.proc_start.arenas} / ${r.proc_start.anon} / ${r.proc_start.file} → ${r.proc_end.brk} / ${r.proc_end.arenas} / ${r.proc_end.anon} / ${r.proc_end.file}`,
          ],
        ] as [string, string][])
      : []),
    ...(r.trim_probe?.proc
      ? ([
          [
            'after malloc_trim(0): brk / arenas / anon / file',
            `${r.trim_probe.proc.brk} / ${r.trim_probe.proc.arenas} / ${r.trim_probe.proc.anon} / ${r.trim_probe.proc.file} (rss ${r.trim_probe.proc.rss})`,
          ],
        ] as [string, string][])
      : []),
    ['gateway sockets start → end', `${r.sockets_start} → ${r.sockets_end}`],
    ['gateway exit code after SIGTERM', String(r.gateway_exit_code)],
  ];
  const w = Math.max(...rows.map(([k]) => k.length));
  for (const [k, v] of rows) process.stdout.write(`${k.padEnd(w)}  ${v}\n`);
  const kinds = Object.entries(r.failures_by_kind);
  if (kinds.length) process.stdout.write(`failures by kind: ${kinds.map(([k, n]) => `${k}=${n}`).join(', ')}\n`);
  for (const h of r.hung_calls)
    process.stdout.write(
      `hung ${h.stream ? 'stream' : 'non-stream'} ${h.id}, started ${h.startS.toFixed(1)} s in: ${h.record ?? 'no record read'}\n`,
    );
  if (r.gate_timeline?.length) {
    process.stdout.write(
      "the gate around the hung calls (held calls, new outcomes; per worker: f in flight, w/r the engine's waiting/running, kv usage):\n",
    );
    for (const l of r.gate_timeline) process.stdout.write(`${l}\n`);
  }
}
