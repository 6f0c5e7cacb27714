// One `bench overhead` row as printed (latency, rank of each percentile among the row's calls,
// req/s, CPU per request and its main-thread part, GC, the upstream's CPU, the warm-up trail),
// and the split of a row's CPU per request into main thread, GC pauses and other threads.
import { rankFromSlowest } from './load.ts';
import type { OverheadCase } from './result.ts';
import { fmtWarmUp } from './warm-up.ts';

/** ` (#k/N)`: the percentile q is the k-th slowest of the run's N calls. */
const rankOf = (c: OverheadCase, q: number): string =>
  c.requests ? ` (#${rankFromSlowest(c.requests, q)}/${c.requests})` : '';

export const fmtCase = (c: OverheadCase): string =>
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
