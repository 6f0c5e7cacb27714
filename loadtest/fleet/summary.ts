// One fleet run reduced to the documented JSON row: hit rate (cached ÷ prompt tokens, counted at
// each request's first admission), prefill tokens the engines computed (recomputation after a
// preemption included), TTFT / end-to-end / queue-wait percentiles (nearest rank, ms), output
// throughput over the makespan, imbalance (max ÷ mean requests per worker), preemptions, and the
// attribution counters (predicted vs reported cached tokens). Also the text table. O(n log n).
import { percentile } from '../replay/metrics.ts';
import type { FleetResult } from './simulator.ts';

/** The official OpenAI SDKs' request timeout (openai-node DEFAULT_TIMEOUT, the Python SDK's read
 *  timeout): a call with no response head by then is aborted and resent, ms. */
export const SDK_TIMEOUT_MS = 600_000;

export interface Pcts {
  p50: number;
  p90: number;
  p95: number;
  p99: number;
}

export interface FleetRunSummary {
  config: {
    policy: string;
    workers: number;
    kv_tokens: number;
    block_size: number;
    preset: string;
    rate_scale: number;
    index: string;
    /** arrival: the policy picks when the call arrives; admission: late binding (the call is
     *  held at the gateway until a worker can admit it) */
    dispatch: 'arrival' | 'admission';
  };
  /** dispatch admission: calls sent at arrival (bound: one worker's cache held them; passed:
   *  nothing held and a worker could admit them), calls the gateway-side queue held, its peak length, and the held calls that spilled (dispatched as at
   *  arrival): the oldest when a newcomer met a full queue, or at their max_wait_ms */
  gateway_queue?: {
    bound_at_arrival: number;
    passed_at_arrival: number;
    held: number;
    peak: number;
    spilled_full: number;
    spilled_deadline: number;
  };
  requests: number;
  completed: number;
  /** refused: prompt + output larger than one engine's KV capacity */
  rejected: number;
  hit_rate: number;
  prefill_tokens: number;
  ttft_ms: Pcts;
  /** calls whose first token came more than SDK_TIMEOUT_MS after they arrived: a default SDK
   *  client streaming the answer would have given up on them and resent (its timer stops at the
   *  response head, which a stream sends with the first token; the simulator's clients wait) */
  ttft_over_sdk_timeout: number;
  /** calls that finished more than SDK_TIMEOUT_MS after they arrived: the non-streaming case (the
   *  response head comes with the whole answer, so the SDK's timer covers the call end to end) */
  e2e_over_sdk_timeout: number;
  e2e_ms: Pcts;
  queue_wait_ms: Pcts;
  throughput_tok_s: number;
  imbalance: number;
  preemptions: number;
  /** Σ predicted cached tokens ÷ Σ reported, over decisions with a prediction (null: none made). */
  predicted_over_reported: number | null;
  /** Requests whose reusable prefix was shorter than one KV block (nothing an engine can reuse). */
  sub_block_prefix_requests: number;
  /** shares of workers × makespan: steps with prefill, decode-only steps, and decode-only steps
   *  while requests waited for KV (the rest is idle) */
  engine_time: {
    prefill: number;
    decode_only: number;
    decode_only_waiting: number;
    /** share of decode tokens (KV-weighted) that rode in steps with prefill */
    decode_riding: number;
  };
  /** the 10 % of requests with the highest TTFT: mean arrival time, wait until first scheduled,
   *  and first scheduled → first token (prefill, including steps shared with others), seconds */
  slowest_decile: { arrival_s: number; queue_wait_s: number; prefill_s: number };
  /** per branch the policy named (ctxgate's sticky, prefix_match, balance…): requests, their hit
   *  rate (cached ÷ prompt tokens) and TTFT p90, ms; where a policy's hits and waits come from */
  branches: Record<string, { requests: number; hit_rate: number; ttft_p90_ms: number }>;
  /** with a client model (--client-timeout-s): its settings and what happened; the TTFT figures
   *  above are over the calls answered (from their first send), ttft_p90_ms_failed_last counts
   *  each failed call as slower than any (null: the p90 falls on a failed call) */
  client?: {
    timeout_s: number;
    retries: number;
    stream: boolean;
    timeouts: number;
    resent: number;
    failed: number;
    dropped_held: number;
    abandoned_at_engine: number;
    wasted_prefill_tokens: number;
    ttft_p90_ms_failed_last: number | null;
  };
  /** with --tenants K: each tenant's answered calls and TTFT p90 (ms), and the spread of those p90s */
  tenants?: {
    count: number;
    per_tenant: Record<string, { requests: number; ttft_p90_ms: number }>;
    p90_min_ms: number;
    p90_median_ms: number;
    p90_max_ms: number;
    /** max ÷ min of the tenants' p90 */
    spread: number;
  };
  wall_s: number;
}

function pcts(values: number[]): Pcts {
  const s = values.slice().sort((a, b) => a - b);
  const r = (x: number): number => Math.round(x * 10) / 10;
  return {
    p50: r(percentile(s, 0.5)),
    p90: r(percentile(s, 0.9)),
    p95: r(percentile(s, 0.95)),
    p99: r(percentile(s, 0.99)),
  };
}

export interface SummaryContext {
  preset: string;
  rateScale: number;
  index: string;
  wallS: number;
  requests: number;
}

export function summarize(res: FleetResult, ctx: SummaryContext): FleetRunSummary {
  const o = res.outcomes;
  let prompt = 0;
  let cached = 0;
  let output = 0;
  let predicted = 0;
  let reported = 0;
  let withPrediction = 0;
  let subBlock = 0;
  let t0 = Infinity;
  let t1 = 0;
  for (const x of o) {
    prompt += x.inputTokens;
    cached += Math.max(0, x.cachedTokens);
    output += x.outputTokens;
    if (x.predictedCachedTokens !== undefined) {
      predicted += x.predictedCachedTokens;
      reported += Math.max(0, x.cachedTokens);
      withPrediction++;
    }
    if (x.subBlockPrefix) subBlock++;
    t0 = Math.min(t0, x.arrivalMs);
    t1 = Math.max(t1, x.finishMs);
  }
  // the engines may still compute sends whose clients left after the last answered call
  if (res.lastStepEndMs !== undefined) t1 = Math.max(t1, res.lastStepEndMs);
  const r3 = (x: number): number => Math.round(x * 1000) / 1000;
  const r1 = (x: number): number => Math.round(x * 10) / 10;
  const engineS = (res.perWorker.length * (t1 - t0)) / 1000;
  const sumOf = (k: 'prefillS' | 'decodeOnlyS' | 'decodeOnlyWaitingS'): number =>
    engineS > 0 ? r3(res.perWorker.reduce((a, w) => a + w.engineTime[k], 0) / engineS) : 0;
  const riding = res.perWorker.reduce((a, w) => a + w.engineTime.decodeContextRiding, 0);
  const alone = res.perWorker.reduce((a, w) => a + w.engineTime.decodeContextAlone, 0);
  const slow = o
    .slice()
    .sort((a, b) => b.firstTokenMs - b.arrivalMs - (a.firstTokenMs - a.arrivalMs))
    .slice(0, Math.max(1, Math.ceil(o.length / 10)));
  const meanS = (f: (x: (typeof o)[number]) => number): number =>
    o.length ? r1(slow.reduce((a, x) => a + f(x), 0) / slow.length / 1000) : 0;
  const byBranch = new Map<string, { requests: number; prompt: number; cached: number; ttft: number[] }>();
  for (const x of o) {
    let b = byBranch.get(x.branch);
    if (!b) byBranch.set(x.branch, (b = { requests: 0, prompt: 0, cached: 0, ttft: [] }));
    b.requests++;
    b.prompt += x.inputTokens;
    b.cached += Math.max(0, x.cachedTokens);
    b.ttft.push(x.firstTokenMs - x.arrivalMs);
  }
  const branches: FleetRunSummary['branches'] = {};
  for (const [k, b] of [...byBranch].sort((a, c) => c[1].requests - a[1].requests))
    branches[k] = {
      requests: b.requests,
      hit_rate: b.prompt > 0 ? Math.round((b.cached / b.prompt) * 10_000) / 10_000 : 0,
      ttft_p90_ms: pcts(b.ttft).p90,
    };
  const counts = res.perWorker.map((w) => w.requests);
  const mean = counts.reduce((a, b) => a + b, 0) / Math.max(1, counts.length);
  const span = (t1 - t0) / 1000;
  return {
    config: {
      policy: res.config.policy,
      workers: res.config.workers,
      kv_tokens: res.config.kvTokens,
      block_size: res.config.blockSize,
      preset: ctx.preset,
      rate_scale: ctx.rateScale,
      index: ctx.index,
      dispatch: res.config.dispatch ?? 'arrival',
    },
    ...(res.config.dispatch === 'admission'
      ? {
          gateway_queue: {
            bound_at_arrival: res.boundAtArrival,
            passed_at_arrival: res.passedAtArrival,
            held: res.gatewayQueued,
            peak: res.gatewayPeak,
            spilled_full: res.spilledFull,
            spilled_deadline: res.spilledDeadline,
          },
        }
      : {}),
    requests: ctx.requests,
    completed: o.length,
    rejected: res.rejected,
    hit_rate: prompt > 0 ? Math.round((cached / prompt) * 10_000) / 10_000 : 0,
    prefill_tokens: res.perWorker.reduce((a, w) => a + w.prefillTokens, 0),
    ttft_ms: pcts(o.map((x) => x.firstTokenMs - x.arrivalMs)),
    ttft_over_sdk_timeout: o.reduce((a, x) => a + (x.firstTokenMs - x.arrivalMs > SDK_TIMEOUT_MS ? 1 : 0), 0),
    e2e_over_sdk_timeout: o.reduce((a, x) => a + (x.finishMs - x.arrivalMs > SDK_TIMEOUT_MS ? 1 : 0), 0),
    e2e_ms: pcts(o.map((x) => x.finishMs - x.arrivalMs)),
    queue_wait_ms: pcts(o.map((x) => x.firstScheduledMs - x.arrivalMs)),
    throughput_tok_s: span > 0 ? Math.round(output / span) : 0,
    imbalance: mean > 0 ? Math.round((Math.max(...counts) / mean) * 1000) / 1000 : 0,
    preemptions: res.perWorker.reduce((a, w) => a + w.preemptions, 0),
    predicted_over_reported:
      withPrediction > 0 && reported > 0 ? Math.round((predicted / reported) * 1000) / 1000 : null,
    sub_block_prefix_requests: subBlock,
    engine_time: {
      prefill: sumOf('prefillS'),
      decode_only: sumOf('decodeOnlyS'),
      decode_only_waiting: sumOf('decodeOnlyWaitingS'),
      decode_riding: r3(riding / Math.max(1, riding + alone)),
    },
    slowest_decile: {
      arrival_s: meanS((x) => x.arrivalMs - t0),
      queue_wait_s: meanS((x) => x.firstScheduledMs - x.arrivalMs),
      prefill_s: meanS((x) => x.firstTokenMs - x.firstScheduledMs),
    },
    branches,
    ...clientSummary(res),
    ...tenantSummary(res),
    wall_s: Math.round(ctx.wallS * 100) / 100,
  };
}

function clientSummary(res: FleetResult): Pick<FleetRunSummary, 'client'> {
  const c = res.config.client;
  if (!c || !res.client) return {};
  const ttft = res.outcomes.map((x) => x.firstTokenMs - x.arrivalMs).sort((a, b) => a - b);
  const all = ttft.concat(new Array<number>(res.client.failed).fill(Infinity));
  const p90 = percentile(all, 0.9);
  return {
    client: {
      timeout_s: c.timeoutMs / 1000,
      retries: c.retries,
      stream: c.stream,
      timeouts: res.client.timeouts,
      resent: res.client.resent,
      failed: res.client.failed,
      dropped_held: res.client.droppedHeld,
      abandoned_at_engine: res.client.abandonedAtEngine,
      wasted_prefill_tokens: res.client.wastedPrefillTokens,
      ttft_p90_ms_failed_last: Number.isFinite(p90) ? Math.round(p90 * 10) / 10 : null,
    },
  };
}

function tenantSummary(res: FleetResult): Pick<FleetRunSummary, 'tenants'> {
  const k = res.config.tenants ?? 1;
  if (k <= 1) return {};
  const by = new Map<string, number[]>();
  for (const x of res.outcomes) {
    const t = x.tenant ?? 'fleet';
    (by.get(t) ?? by.set(t, []).get(t)!).push(x.firstTokenMs - x.arrivalMs);
  }
  const per_tenant: Record<string, { requests: number; ttft_p90_ms: number }> = {};
  for (const t of [...by.keys()].sort((a, b) => Number(a.slice(1)) - Number(b.slice(1))))
    per_tenant[t] = { requests: by.get(t)!.length, ttft_p90_ms: pcts(by.get(t)!).p90 };
  const p90s = Object.values(per_tenant)
    .map((t) => t.ttft_p90_ms)
    .sort((a, b) => a - b);
  const min = p90s[0] ?? 0;
  const max = p90s[p90s.length - 1] ?? 0;
  return {
    tenants: {
      count: k,
      per_tenant,
      p90_min_ms: min,
      p90_median_ms: percentile(p90s, 0.5),
      p90_max_ms: max,
      spread: min > 0 ? Math.round((max / min) * 1000) / 1000 : 0,
    },
  };
}

const COLS: Array<[string, (r: FleetRunSummary) => string]> = [
  ['policy', (r) => r.config.policy],
  ['done', (r) => `${r.completed}/${r.requests}`],
  ['hit', (r) => (r.hit_rate * 100).toFixed(1) + '%'],
  ['ttft p50', (r) => (r.ttft_ms.p50 / 1000).toFixed(2) + 's'],
  ['ttft p90', (r) => (r.ttft_ms.p90 / 1000).toFixed(2) + 's'],
  ['ttft p99', (r) => (r.ttft_ms.p99 / 1000).toFixed(2) + 's'],
  // calls past the SDKs' timeout: first token (a streaming client), end (a non-streaming one)
  [`ttft>${SDK_TIMEOUT_MS / 1000}s`, (r) => String(r.ttft_over_sdk_timeout)],
  [`e2e>${SDK_TIMEOUT_MS / 1000}s`, (r) => String(r.e2e_over_sdk_timeout)],
  ['e2e p90', (r) => (r.e2e_ms.p90 / 1000).toFixed(1) + 's'],
  ['tok/s', (r) => String(r.throughput_tok_s)],
  ['imbal', (r) => r.imbalance.toFixed(2)],
  ['preempt', (r) => String(r.preemptions)],
  ['p90 vs rr', () => ''],
];

/** Per policy: where the engines' time went and where the slowest tenth of requests waited. */
export function formatEngineTime(runs: FleetRunSummary[]): string {
  const pct = (x: number): string => (x * 100).toFixed(0) + '%';
  return runs
    .map((r) => {
      const e = r.engine_time;
      const d = r.slowest_decile;
      return (
        `${r.config.policy}: engines ${pct(e.prefill)} in prefill steps, ${pct(e.decode_only)} decode-only ` +
        `(${pct(e.decode_only_waiting)} while requests waited for KV), ${pct(e.decode_riding)} of decode (KV-weighted) ` +
        `in prefill steps; slowest 10% by TTFT arrived at ` +
        `${d.arrival_s.toFixed(0)} s on average, waited ${d.queue_wait_s.toFixed(1)} s to be scheduled, ` +
        `then ${d.prefill_s.toFixed(1)} s to first token` +
        (r.gateway_queue
          ? ` (late binding: ${r.gateway_queue.bound_at_arrival} calls sent at arrival to the worker holding their prefix, ${r.gateway_queue.passed_at_arrival} at arrival with nothing held and a worker free, ${r.gateway_queue.held} held at the gateway until a worker could admit, peak ${r.gateway_queue.peak} waiting; of those spilled to arrival dispatch ${r.gateway_queue.spilled_full} for room (queue full) and ${r.gateway_queue.spilled_deadline} at max_wait_ms)`
          : '') +
        (r.client
          ? `; clients (${r.client.stream ? 'stream' : 'non-stream'}, timeout ${r.client.timeout_s} s, ${r.client.retries} retries): ` +
            `${r.client.timeouts} sends timed out (${r.client.dropped_held} dropped while held, ${r.client.abandoned_at_engine} ` +
            `computed for nobody: ${r.client.wasted_prefill_tokens} prompt tokens), ${r.client.resent} resent, ` +
            `${r.client.failed} calls failed (retries spent); TTFT p90 with the failed calls last ` +
            `${r.client.ttft_p90_ms_failed_last === null ? 'n/a (a failed call)' : (r.client.ttft_p90_ms_failed_last / 1000).toFixed(2) + 's'}`
          : '') +
        (r.tenants
          ? `; ${r.tenants.count} tenants: TTFT p90 min / median / max ${(r.tenants.p90_min_ms / 1000).toFixed(2)} / ` +
            `${(r.tenants.p90_median_ms / 1000).toFixed(2)} / ${(r.tenants.p90_max_ms / 1000).toFixed(2)} s (spread ${r.tenants.spread.toFixed(2)}×); ` +
            `each tenant's TTFT p90: ${Object.entries(r.tenants.per_tenant)
              .map(([t, x]) => `${t} ${(x.ttft_p90_ms / 1000).toFixed(1)}`)
              .join(', ')} s`
          : '')
      );
    })
    .join('\n');
}

export function formatFleetTable(runs: FleetRunSummary[]): string {
  const rr = runs.find((r) => r.config.policy === 'round_robin');
  const rows = runs.map((r) =>
    COLS.map(([name, f]) =>
      name === 'p90 vs rr'
        ? rr && rr.ttft_ms.p90 > 0
          ? (r.ttft_ms.p90 / rr.ttft_ms.p90).toFixed(2) + '×'
          : '-'
        : f(r),
    ),
  );
  const head = COLS.map(([n]) => n);
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i].length)));
  const line = (cells: string[]): string =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ');
  return [line(head), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}

/** The run's timeline (simulateFleet with timelineMs): one line per window. */
export function formatTimeline(policy: string, res: FleetResult): string {
  const rows = res.timeline ?? [];
  const workers = res.perWorker.length;
  const byWindow = new Map<number, number[]>();
  const w = res.config.timelineMs ?? 1;
  for (const x of res.outcomes) {
    const b = Math.floor(x.arrivalMs / w);
    (byWindow.get(b) ?? byWindow.set(b, []).get(b)!).push(x.firstTokenMs - x.arrivalMs);
  }
  const pct = (x: number): string => (x * 100).toFixed(0).padStart(4) + '%';
  const lines = [
    `${policy}: timeline (windows of ${w / 1000} s; engine time as a share of ${workers} workers × the window)`,
    '   start  arrivals  ttft p50  ttft p90  prefill  decode-only  (waiting)  waiting  kv use',
  ];
  rows.forEach((r, b) => {
    const t = (byWindow.get(b) ?? []).sort((x, y) => x - y);
    const q = (p: number): string => (t.length ? (percentile(t, p) / 1000).toFixed(1) + 's' : '-').padStart(9);
    const share = (s: number): number => s / ((workers * w) / 1000);
    lines.push(
      `${((r.startMs / 1000).toFixed(0) + 's').padStart(8)}  ${String(r.arrivals).padStart(8)} ${q(0.5)} ${q(0.9)}` +
        `    ${pct(share(r.prefillS))}        ${pct(share(r.decodeOnlyS))}      ${pct(share(r.decodeOnlyWaitingS))}` +
        `  ${r.waitingMean.toFixed(1).padStart(7)}  ${pct(r.kvUsageMean)}`,
    );
  });
  return lines.join('\n');
}
