// The one metrics module: every ctxgate_ series is declared here (prefix, unit suffix, bounded
// labels) so other parts only increment typed handles. One Registry per gateway keeps tests apart.
import { Counter, Gauge, Histogram, collectDefaultMetrics, type Registry } from 'prom-client';
import { cycleBreakCounts } from '../kvplanner/prefix-index-entry.ts';
import { RECEIPT_METRICS } from '../middleware/chain.ts';
import { fastEncodeCounts } from '../middleware/tokens/hf-handle.ts';
import { nativeRenderStats } from '../middleware/tokens/native-render.ts';
import type { Receipt } from '../middleware/types.ts';
import { counterChildren, gaugeChildren, histogramChildren } from './metrics-children.ts';

/** Latency buckets in seconds: sub-ms gateway overhead up to multi-minute generations. */
const LATENCY_BUCKETS = [
  0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300,
];
const OVERHEAD_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1];

export function createMetrics(registry: Registry, opts: { defaultMetrics?: boolean } = {}) {
  const m = declareMetrics(registry, opts);
  return { ...m, perCall: perCallChildren(m) };
}

function declareMetrics(registry: Registry, opts: { defaultMetrics?: boolean }) {
  const registers = [registry];
  const counter = <L extends string>(name: string, help: string, labelNames: readonly L[]) =>
    new Counter<L>({ name: `ctxgate_${name}`, help, labelNames, registers });
  const gauge = <L extends string>(name: string, help: string, labelNames: readonly L[]) =>
    new Gauge<L>({ name: `ctxgate_${name}`, help, labelNames, registers });
  const histogram = <L extends string>(name: string, help: string, labelNames: readonly L[], buckets: number[]) =>
    new Histogram<L>({ name: `ctxgate_${name}`, help, labelNames, buckets, registers });

  if (opts.defaultMetrics) collectDefaultMetrics({ register: registry, prefix: 'ctxgate_process_' });

  return {
    requests: counter('requests_total', 'Requests answered, by status class and ingress API', [
      'model',
      'tenant',
      'status',
      'api',
    ] as const),
    ttft: histogram(
      'ttft_seconds',
      'Request arrival to first content/tool-call delta (or first body byte)',
      ['model'] as const,
      LATENCY_BUCKETS,
    ),
    requestDuration: histogram(
      'request_duration_seconds',
      'Request arrival to last byte',
      ['model'] as const,
      LATENCY_BUCKETS,
    ),
    gatewayOverhead: histogram(
      'gateway_overhead_seconds',
      'Request time not spent waiting on the upstream',
      ['model'] as const,
      OVERHEAD_BUCKETS,
    ),
    upstreamAttempts: counter('upstream_attempts_total', 'Upstream attempts by outcome', [
      'model',
      'worker',
      'outcome',
    ] as const),
    retries: counter('retries_total', 'Attempts retried on another worker before the first byte', ['model'] as const),
    streamErrors: counter('stream_errors_total', 'Streams ended by an upstream failure after the first byte', [
      'model',
    ] as const),
    workerHealthy: gauge('worker_healthy', '1 when the worker is admitted, 0 when ejected', [
      'model',
      'worker',
    ] as const),
    workerInFlight: gauge('worker_in_flight', 'Requests in flight on the worker', ['model', 'worker'] as const),
    promptTokens: counter('prompt_tokens_total', 'Prompt tokens reported by workers', ['model', 'tenant'] as const),
    cachedTokens: counter('cached_tokens_total', 'Prompt tokens served from the worker prefix cache', [
      'model',
      'tenant',
    ] as const),
    predictedCachedTokens: counter('predicted_cached_tokens_total', 'Prompt tokens the gateway predicted cached', [
      'model',
      'tenant',
    ] as const),
    outputTokens: counter('output_tokens_total', 'Completion tokens reported by workers', ['model', 'tenant'] as const),
    costUsd: counter('cost_usd_total', 'Cost in USD by kind (uncached_input, cached_input, cache_write, output)', [
      'model',
      'tenant',
      'kind',
    ] as const),
    savingsUsd: counter('savings_usd_total', 'USD saved by cached prompt tokens', ['model', 'tenant'] as const),
    workerCacheHitRatio: gauge('worker_cache_hit_ratio', 'Cached / prompt tokens of the last requests on the worker', [
      'model',
      'worker',
    ] as const),
    routingDecisions: counter('routing_decisions_total', 'Routing decisions by policy branch', [
      'model',
      'policy',
      'branch',
    ] as const),
    routingCachedTokens: counter(
      'routing_cached_tokens_total',
      'Prompt tokens cached on the chosen worker, as the policy predicted at the decision (source=predicted) and as the worker reported (source=reported); decisions with both only',
      ['model', 'policy', 'source'] as const,
    ),
    subBlockPrefix: counter(
      'sub_block_prefix_total',
      "Calls whose reusable prefix (shared with the session's previous call) is shorter than one KV block: the engine can serve none of it",
      ['model'] as const,
    ),
    admissionOutcomes: counter(
      'admission_outcomes_total',
      'Late binding (dispatch admission): calls by what the gate did: passed (a worker could admit), bound (to the worker holding their prompt), queued, released, spilled_full (a held call sent on as at arrival to make room in a full queue), spilled_deadline (sent on so at max_wait_ms), refused (a full queue while other tenants held calls: 429 / 503), aborted, shutdown (held or to be held when the gateway began to drain: 503 shutting_down)',
      ['model', 'outcome'] as const,
    ),
    admissionWait: histogram(
      'admission_wait_seconds',
      'Late binding: how long a held call waited at the gateway, by how it left (released, spilled_full, spilled_deadline, aborted)',
      ['model', 'outcome'] as const,
      LATENCY_BUCKETS,
    ),
    admissionHeld: gauge('admission_held', 'Late binding: calls held at the gateway now', ['model'] as const),
    engineSignalsMissing: gauge(
      'engine_signals_missing',
      "1 while a worker's /metrics answers 404 or has none of its engine's load series (scraped with backoff; late binding treats it as able, as at arrival)",
      ['model', 'worker'] as const,
    ),
    tombstones: counter('tombstones_total', 'Tombstones appended for stale observations', ['model'] as const),
    compactions: counter('compactions_total', 'Compactions by outcome', ['model', 'outcome'] as const),
    compactionTokensSaved: counter('compaction_tokens_saved_total', 'Tokens removed by compaction', ['model'] as const),
    cacheBreaks: counter('cache_breaks_total', 'Prefix cache breaks by cause', ['model', 'cause'] as const),
    usageRecordsDropped: counter(
      'usage_records_dropped_total',
      'Usage records dropped (ledger backlog full or failing)',
      [] as const,
    ),
    rateLimited: counter(
      'rate_limited_total',
      'Requests refused by a rate limit, a budget or the per-tenant in-flight cap',
      ['tenant'] as const,
    ),
    deferredWorkErrors: counter(
      'deferred_work_errors_total',
      'Work a request left for after its upstream send that threw (logged; the request went on), by kind (routing_index: the routing decision’s prefix-index insert)',
      ['model', 'kind'] as const,
    ),
    sharedIndexErrors: counter(
      'shared_index_errors_total',
      'Redis calls of the replica-shared prefix index and session homes that failed or timed out (routing went on with this replica’s own view), by operation',
      ['model', 'op'] as const,
    ),
    kvEventBatches: counter(
      'kv_event_batches_total',
      'Engine KV event batches received per worker: applied live, recovered through replay, undecodable, or replay_overrun (a replay answered past its message, byte or time budget: failed)',
      ['model', 'worker', 'outcome'] as const,
    ),
    kvEventGaps: counter(
      'kv_event_gaps_total',
      'Sequence gaps in a worker’s KV events, by how they were closed: replay (every missed batch re-sent) or resync (the worker’s index restarted from what came next)',
      ['model', 'worker', 'recovery'] as const,
    ),
    kvEventFallbacks: counter(
      'kv_event_fallbacks_total',
      'Times a worker’s KV events stopped (silent while requests went there, or disconnected) and routing fell back to its approximate index',
      ['model', 'worker', 'reason'] as const,
    ),
    // Read from the process-wide counts at scrape time (the renderers live below the gateway).
    nativeRenders: new Counter({
      name: 'ctxgate_native_renders_total',
      help: 'Chat templates rendered by their native (TypeScript) rendering: all, cross-checked against the jinja interpreter, and differing from it (each switches that renderer back to the interpreter)',
      labelNames: ['outcome'] as const,
      registers,
      collect() {
        const s = nativeRenderStats();
        this.reset();
        this.inc({ outcome: 'rendered' }, s.rendered);
        this.inc({ outcome: 'checked' }, s.checked);
        this.inc({ outcome: 'mismatched' }, s.mismatches);
      },
    }),
    fastEncodes: new Counter({
      name: 'ctxgate_tokenizer_fast_encodes_total',
      help: "Texts encoded by the memoised BPE fast path, on the event loop and the render pool's threads: all, compared with the library, and differing from it (each switches that tokenizer's fast path off in its thread; a warning is logged)",
      labelNames: ['outcome'] as const,
      registers,
      collect() {
        this.reset();
        this.inc({ outcome: 'encoded' }, fastEncodeCounts.fast);
        this.inc({ outcome: 'checked' }, fastEncodeCounts.checked);
        this.inc({ outcome: 'mismatched' }, fastEncodeCounts.mismatched);
      },
    }),
    prefixIndexCycleBreaks: new Counter({
      name: 'ctxgate_prefix_index_cycle_breaks_total',
      help: 'Blocks the prefix index evicted despite a held child because the children formed a cycle (a hash collision or inconsistent KV events; without the guard eviction would loop for ever). Should stay 0',
      registers,
      collect() {
        this.reset();
        this.inc(cycleBreakCounts.broken);
      },
    }),
    kvIndexPrecise: gauge(
      'kv_index_precise',
      '1 while routing reads the worker’s cache from its KV events, 0 while it guesses (approximate index)',
      ['model', 'worker'] as const,
    ),
  };
}

/** Bound children of the series every call touches (finish.ts): a call hashes no label set. */
function perCallChildren(m: ReturnType<typeof declareMetrics>) {
  return {
    requests: counterChildren(m.requests),
    requestDuration: histogramChildren(m.requestDuration),
    gatewayOverhead: histogramChildren(m.gatewayOverhead),
    ttft: histogramChildren(m.ttft),
    promptTokens: counterChildren(m.promptTokens),
    cachedTokens: counterChildren(m.cachedTokens),
    outputTokens: counterChildren(m.outputTokens),
    predictedCachedTokens: counterChildren(m.predictedCachedTokens),
    workerCacheHitRatio: gaugeChildren(m.workerCacheHitRatio),
    routingCachedTokens: counterChildren(m.routingCachedTokens),
    subBlockPrefix: counterChildren(m.subBlockPrefix),
    cacheBreaks: counterChildren(m.cacheBreaks),
    tombstones: counterChildren(m.tombstones),
    compactions: counterChildren(m.compactions),
    compactionTokensSaved: counterChildren(m.compactionTokensSaved),
    // Per attempt, on the request path (not in a timed section): worker.ts begin/end,
    // attempt.ts metricsObserver, upstream-call.ts at each routing decision.
    workerInFlight: gaugeChildren(m.workerInFlight),
    upstreamAttempts: counterChildren(m.upstreamAttempts),
    routingDecisions: counterChildren(m.routingDecisions),
    // Late binding's gate, once per call (assemble.ts gate.onOutcome).
    admissionOutcomes: counterChildren(m.admissionOutcomes),
    admissionWait: histogramChildren(m.admissionWait),
    admissionHeld: gaugeChildren(m.admissionHeld),
  };
}

export type GatewayMetrics = ReturnType<typeof createMetrics>;

export function statusClass(status: number): string {
  return `${Math.floor(status / 100)}xx`;
}

/** Counts a call's receipts as their stages declare (middleware/chain.ts RECEIPT_METRICS): the
 * `outcome` label is bounded by the declared actions. */
export function countReceipts(m: GatewayMetrics, model: string, receipts: readonly Receipt[]): void {
  const c = m.perCall;
  for (const r of receipts) {
    const d = RECEIPT_METRICS.get(`${r.stage}\u0000${r.action}`);
    if (!d) continue;
    if (d.counter === 'tombstones') c.tombstones.at(model).inc();
    else c.compactions.at(model, r.action).inc();
    if (d.tokensSaved && r.tokens_before !== undefined && r.tokens_after !== undefined)
      c.compactionTokensSaved.at(model).inc(Math.max(0, r.tokens_before - r.tokens_after));
  }
}
