// The result shapes of `bench overhead` (its --json output) and the settings they are read at.
import type { CriticalPath } from './critical-path.ts';
import type { GcPauses } from './gc-pauses.ts';
import type { IngressCpu } from './ingress-cpu.ts';
import type { SlowCalls } from './slow-calls.ts';
import type { TailCalls } from './tail-calls.ts';
import type { ThroughputRounds } from './throughput-rounds.ts';
import type { WarmUp } from './warm-up.ts';

/** Latency is measured on one connection, throughput on this many. */
export const THROUGHPUT_CONNECTIONS = 16;
/** Calls of each growing 1-connection row: its p99 is then the ~40th slowest call, not the ~10th
 *  of a 3-s row (~1,000-1,300 calls through ctxgate), and its p99.9 the 4th. By count, not by
 *  time, so that every target's p99 sits at the same rank. */
export const DEFAULT_C1_CALLS = 4000;
/** Turns each ingress API takes in the ingress comparison (medians are compared). */
export const INGRESS_ROUNDS = 3;

export type Target =
  | 'direct'
  | 'bare_proxy'
  | 'portkey'
  | 'ctxgate'
  | 'ctxgate_passthrough'
  | 'ctxgate_anthropic'
  | 'ctxgate_responses';

export interface OverheadCase {
  name: string;
  traffic: 'growing' | 'fixed' | 'ingress';
  target: Target;
  tokens?: number;
  stream: boolean;
  connections: number;
  p50_ms: number;
  p99_ms: number;
  p999_ms: number;
  rps: number;
  errors: number;
  /** CPU (user + system) of the target's process per request over the run; absent for direct. */
  cpu_ms_per_req?: number;
  /** The part of it spent on the process's main thread (the event loop); the rest is V8's GC
   *  helper threads, libuv's pool and worker threads. */
  cpu_main_ms_per_req?: number;
  /** Requests answered in the measured run. */
  requests?: number;
  /** CPU of the fake upstream's process per request over the run: it shares the host's cores with
   *  the target, so a costly fake compresses throughput ratios (the direct case has it too). */
  upstream_cpu_ms_per_req?: number;
  /** The target process's main-thread GC pauses over the run (ctxgate and bare proxy cases). */
  gc?: GcPauses;
  /** The warm-up before the measured run (its calls and CPU per call by chunk). */
  warmup?: WarmUp;
}

export interface OverheadResult {
  cases: OverheadCase[];
  /** Flags ctxgate's process ran with after the deployed ones (--gateway-node-flags); absent: none. */
  gateway_node_flags?: string[];
  growing?: {
    /** ctxgate (default pipeline) minus direct, 1 connection. */
    added_p50_ms: number;
    added_p99_ms: number;
    /** ctxgate's p99.9 minus direct's (no target: it shows what the p99 no longer does). */
    added_p999_ms: number;
    /** The calls each p99.9 was read from, and its rank from the slowest (a handful at ~1-3k calls). */
    p999_calls: { ctxgate: number; ctxgate_rank: number; direct: number; direct_rank: number };
    /** The same for each p99 (the ~40th slowest at DEFAULT_C1_CALLS calls). */
    p99_calls: { ctxgate: number; ctxgate_rank: number; direct: number; direct_rank: number };
    /** Same for Portkey and the bare proxy, from the same run. */
    portkey_added_p50_ms?: number;
    portkey_added_p99_ms?: number;
    bare_added_p50_ms: number;
    bare_added_p99_ms: number;
    /** req/s at 16 connections, ctxgate over Portkey and over the bare proxy. */
    throughput_ratio_vs_portkey?: number;
    /** ctxgate and Portkey taking turns at 16 connections (order alternating): the rounds and the
     *  median of their ratios, the figure the throughput target is judged on. */
    throughput_rounds?: ThroughputRounds;
    throughput_ratio_vs_bare_proxy: number;
    /** Gateway ms per request by stage (1-connection run). */
    stages: Record<string, number>;
    /** The 1-connection run's main-thread CPU per request outside every timed stage. */
    untimed_ms?: number;
    /** Of `stages`: GC pause time per request (ms) that fell inside each stage's sections. */
    stages_gc_ms?: Record<string, number>;
    /** CPU per request at 16 connections (process user + system time; the figure load does not inflate). */
    cpu_ms_per_req: { ctxgate?: number; portkey?: number; bare_proxy?: number };
    /** The fake upstream's CPU per request at 16 connections, by target (it shares the cores). */
    upstream_cpu_ms_per_req: { direct?: number; ctxgate?: number; portkey?: number; bare_proxy?: number };
    /** Requests per second one fully used core serves: 1000 / ctxgate's CPU per request at 16 connections. */
    ctxgate_rps_per_core?: number;
    /** Where ctxgate's CPU per request at 16 connections goes: its main thread (of which GC pauses)
     *  and its other threads (V8's parallel and concurrent GC helpers first of all). */
    ctxgate_cpu_split?: { main_ms: number; gc_pause_ms: number; other_threads_ms: number };
    /** The 1-connection run's slowest calls beside its middle ones: what their wall time held
     *  (the gateway's timed stages, GC pauses, the rest) and how many were a session's first. */
    slow_calls?: SlowCalls;
    /** The same split of direct's 1-connection calls (no gateway on their path). */
    direct_slow_calls?: SlowCalls;
    /** The 1-connection row's calls from the p99 up, one by one (what each held), and direct's. */
    tail_calls?: TailCalls;
    direct_tail_calls?: TailCalls;
    /** The 1-connection rows' hops, client to client, as medians (critical-path.ts): ctxgate's and direct's. */
    critical_path?: { ctxgate: CriticalPath; direct: CriticalPath };
  };
  /** The same growing sessions by ingress API through the default pipeline, 1 connection. */
  ingress?: {
    /** /v1/messages minus /v1/chat/completions (p50, p99), same run. */
    anthropic_added_p50_ms: number;
    anthropic_added_p99_ms: number;
    /** /v1/responses minus /v1/chat/completions. */
    responses_added_p50_ms: number;
    responses_added_p99_ms: number;
    /** The adapters' own CPU per call on the largest session body, in-process (µs). */
    cpu: IngressCpu;
  };
  fixed?: {
    /** ctxgate passthrough minus bare proxy, 16k-token non-stream case. */
    added_p50_ms: number;
    added_p99_ms: number;
    throughput_ratio_vs_bare_proxy: number;
    /** CPU per request of that case: ctxgate passthrough and the bare proxy (each its own process). */
    cpu_ms_per_req: { passthrough?: number; bare_proxy?: number };
  };
  duration_s: number;
  /** Calls of each growing 1-connection row (0: those rows ran for duration_s instead). */
  c1_calls: number;
  connections: number;
  sessions: number;
}
