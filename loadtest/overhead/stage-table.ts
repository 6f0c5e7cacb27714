// The gateway's time per request by stage (middleware/perf/stage-timers.ts), as `bench overhead`
// prints it: hot-path order, then any other stage, with each stage's share of the total; and,
// given the run's main-thread CPU per request, what the timers do not see (HTTP in and out,
// fastify, undici, the sockets, GC, the hooks between the timed sections).
import type { StageTime } from '../../middleware/perf/stage-timers.ts';

/** Request path order of the timed sections; pipeline stages (`stage:NAME`) go after message_hashes. */
const ORDER = [
  'body_parse',
  'validate',
  'escape',
  'session',
  'message_hashes',
  'stage:*',
  'leaf_note',
  'render',
  'tokens',
  'diagnose',
  // the stages' work handed to after the send (middleware/after-send.ts), run by the commit
  'after_send',
  'block_hashes',
  'store_put',
  'upstream_body',
  'routing',
  'response',
  'metrics',
  'routing_expected',
  'routing_observe',
  'pipeline_observe',
  'usage_ledger',
];

const rank = (k: string): number => {
  const i = ORDER.indexOf(k.startsWith('stage:') ? 'stage:*' : k);
  return i < 0 ? ORDER.length : i;
};

/** Milliseconds per request by stage, in request path order. */
export function perRequest(times: Record<string, StageTime>, requests: number): Record<string, number> {
  const keys = Object.keys(times).sort((a, b) => rank(a) - rank(b));
  return Object.fromEntries(keys.map((k) => [k, requests > 0 ? times[k].ms / requests : 0]));
}

/** The main thread's CPU per request that no timed section covers; undefined without a CPU figure.
 *  The timers read wall time, so a loaded host (the thread preempted inside a section) shrinks it. */
export function untimedMs(ms: Record<string, number>, mainCpuMs: number | undefined): number | undefined {
  if (mainCpuMs === undefined) return undefined;
  return mainCpuMs - Object.values(ms).reduce((a, b) => a + b, 0);
}

export function formatStageTable(ms: Record<string, number>, mainCpuMs?: number): string {
  const total = Object.values(ms).reduce((a, b) => a + b, 0);
  const w = Math.max(5, ...Object.keys(ms).map((k) => k.length));
  const rows = Object.entries(ms).map(
    ([k, v]) =>
      `  ${k.padEnd(w)}  ${(v * 1000).toFixed(0).padStart(6)} µs  ${total > 0 ? ((v / total) * 100).toFixed(1).padStart(5) : '  0.0'} %`,
  );
  return [
    `ctxgate time per request by stage (default pipeline, growing sessions, 1 connection):`,
    ...rows,
    `  ${'total'.padEnd(w)}  ${(total * 1000).toFixed(0).padStart(6)} µs`,
    ...(mainCpuMs === undefined
      ? []
      : [
          `  ${'main thread CPU'.padEnd(w)}  ${(mainCpuMs * 1000).toFixed(0).padStart(6)} µs  (same run, user + system)`,
          `  ${'not timed'.padEnd(w)}  ${((mainCpuMs - total) * 1000).toFixed(0).padStart(6)} µs  (HTTP in/out, fastify, undici, sockets, GC, between sections)`,
        ]),
  ].join('\n');
}
