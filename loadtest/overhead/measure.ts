// One measured `bench overhead` row: the target's process is warmed (warm-up.ts), then loaded
// (load.ts) while its CPU (all threads and main thread, from /proc), the fake upstream's CPU and
// the target's GC pauses are read around the run; the row is kept and printed. The processes of
// a run and what every section of the bench shares are a BenchRun.
import type { GcEvent, GcPauses } from './gc-pauses.ts';
import { gcDelta } from './gc-pauses.ts';
import { fmtCase } from './format-case.ts';
import { type Child, load, type LoadResult } from './load.ts';
import { mainThreadCpuMs, processCpuMs } from './proc-cpu.ts';
import type { OverheadCase, OverheadResult } from './result.ts';
import { warmUp } from './warm-up.ts';

/** The processes of one bench run and its settings: what each section (growing, ingress, fixed) reads. */
export interface BenchRun {
  durationS: number;
  c1Calls: number;
  connections: number;
  sessions: number;
  log: (line: string) => void;
  /** The fake upstream (direct's target), started with --trace. */
  up: Child;
  upstream: string;
  /** ctxgate's process (stage timers on) and the bare proxy's. */
  px: Child;
  bp: Child;
  urls: { bare: string; ctxgate: string };
  /** The Portkey gateway's process, once started (growing section). */
  portkeyPid?: number;
  /** This process's GC pauses (it is the load generator: a pause stops the clock of every latency). */
  loadgenGc: { events(): GcEvent[] };
  cases: OverheadCase[];
  res: OverheadResult;
  /** Stops a child, run in order when the bench ends; a section adds its own. */
  stops: (() => Promise<void>)[];
}

/** The row's identity; measure() fills in its figures. */
export type CaseSpec = Omit<OverheadCase, 'p50_ms' | 'p99_ms' | 'p999_ms' | 'rps' | 'errors'>;

export interface MeasureOptions {
  headers?: Record<string, string>;
  /** Runs after the warm-up, right before the measured load (resets of the processes' traces). */
  before?: () => Promise<unknown>;
  /** Route under the url (default: the chat completions route). */
  path?: string;
  /** Keep each response's end time and latency (LoadResult.calls). */
  keepCalls?: boolean;
  /** Stop after this many calls instead of after the run's duration. */
  amount?: number;
}

/** Warms the target, measures one row of it, keeps it in `run.cases` and prints it. */
export async function measure(
  run: BenchRun,
  c: CaseSpec,
  url: string,
  body: string | (() => string),
  o: MeasureOptions = {},
): Promise<LoadResult> {
  const { up, px, bp, durationS } = run;
  const { headers, path, keepCalls, amount } = o;
  // The process serving this target; direct's is the upstream (warmed by the same rule).
  const pid =
    c.target === 'direct'
      ? undefined
      : c.target === 'portkey'
        ? run.portkeyPid
        : c.target === 'bare_proxy'
          ? bp.proc.pid
          : px.proc.pid;
  const warmup = await warmUp(
    (n) => load({ url, path, body, durationS, amount: n, connections: c.connections, headers }),
    () => processCpuMs(pid ?? up.proc.pid),
  );
  await o.before?.();
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
  if (up0 !== undefined && up1 !== undefined && r.requests > 0) oc.upstream_cpu_ms_per_req = (up1 - up0) / r.requests;
  if (gc0 && own) oc.gc = gcDelta(gc0, JSON.parse(await own.ask('gc')) as GcPauses);
  run.cases.push(oc);
  run.log(fmtCase(oc));
  return r;
}
