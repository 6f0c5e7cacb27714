// bench chaos's report: what a run measured (the JSON of --json) and its table, with each round's
// at-rest reading and the RSS change by part. O(rounds + hung calls).
import type { MemoryMb } from './gateway-proc.ts';
import { mallocAccountLine, type TrimResult } from './malloc-trim.ts';
import type { ProcMemoryMb } from './proc-memory.ts';
import type { Reading } from './reading.ts';
import { type RssParts, rssParts, rssPartsLine } from './rss-parts.ts';
import type { HungCall } from './load.ts';
import type { ChaosLayout } from './options.ts';

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
  /** Whether the end reading is back within `within` of the start (#17's target), and what the readings are. */
  rss_back: { back: boolean; within: number; means: string };
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

/** One round's at-rest reading, in MB: RSS, the main JS heap in use and committed, the malloc heaps. */
export interface RoundFigures {
  rss_mb: number;
  heap_used_mb?: number;
  heap_total_mb?: number;
  malloc_mb?: number;
  parts?: RssParts;
}

export function roundFigures(start: Reading, r: Reading): RoundFigures {
  const parts = rssParts(start, r);
  return {
    rss_mb: Number(r.rss.toFixed(1)),
    ...(r.memory ? { heap_used_mb: r.memory.heapUsed, heap_total_mb: r.memory.heapTotal } : {}),
    ...(r.proc ? { malloc_mb: Math.round((r.proc.brk + r.proc.arenas) * 10) / 10 } : {}),
    ...(parts ? { parts } : {}),
  };
}

/** #17's target: the gateway's RSS at rest after the run within this fraction of the start's. */
export const RSS_BACK_WITHIN = 0.1;

/** Whether RSS came back (a fall counts as back), and what the two readings are. */
export function rssBackOf(startMb: number, endMb: number, restS: number, quietS: number): ChaosReport['rss_back'] {
  return {
    back: endMb <= startMb * (1 + RSS_BACK_WITHIN),
    within: RSS_BACK_WITHIN,
    means:
      "the gateway process's whole RSS (VmRSS: event loop, render threads, malloc heaps) at rest after the run vs at " +
      `rest after the warm-up, each read after ${restS} s idle, a GC, ${quietS} s of quiet and another GC (each a full GC of the event loop and of every running render thread)`,
  };
}

export function printTable(r: ChaosReport): void {
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
    [
      'gateway RSS start → end (MB)',
      `${r.rss_start_mb} → ${r.rss_end_mb} (${pct(r.rss_end_mb, r.rss_start_mb)}; ${r.rss_back.back ? 'back' : 'not back'} within ${r.rss_back.within * 100} %)`,
    ],
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
    ...(r.trim_probe?.before
      ? ([['glibc malloc before the trim (MB)', mallocAccountLine(r.trim_probe.before)]] as [string, string][])
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
  process.stdout.write(`RSS back: ${r.rss_back.means}; within ${r.rss_back.within * 100} % is #17's target.\n`);
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
