// In-memory report aggregation over usage records: the reference semantics the SQL aggregator
// (stores/sqlite-report.ts) must match, and the path for stores without SQL (Redis Stream).
// One pass, O(n) time, O(groups + sessions + series buckets) memory.
import type { UsageRecord } from '../types/usage.ts';
import {
  DEFAULT_TOP_SESSIONS,
  TTFT_EDGES_MS,
  addSums,
  dayKey,
  emptySums,
  pickBucketMs,
  type GroupBy,
  sortGroups,
  type GroupRow,
  type ReportData,
  type ReportQuery,
  type Sums,
} from '../types/report.ts';

export function recordSums(r: UsageRecord): Sums {
  return {
    requests: 1,
    promptTokens: r.promptTokens,
    cachedTokens: r.cachedTokens,
    predictedCachedTokens: r.predictedCachedTokens ?? 0,
    outputTokens: r.outputTokens,
    costUncachedNusd: r.costUncachedInputNusd,
    costCachedNusd: r.costCachedInputNusd,
    costWriteNusd: r.costCacheWriteNusd,
    costOutputNusd: r.costOutputNusd,
    costNusd: r.costNusd,
    cfNoCacheNusd: r.cfNoCacheNusd,
    cfOriginalNusd: r.cfOriginalNusd ?? r.costNusd,
    savingsNusd: r.savingsNusd,
    savingsLayoutNusd: r.savingsLayoutNusd,
    savingsRoutingNusd: r.savingsRoutingNusd,
    savingsEngineNusd: r.savingsEngineNusd,
    errors: r.status >= 400 ? 1 : 0,
    billedFailures: r.billing === 'billed_failure' ? 1 : 0,
    predictedUsage: r.usageSource === 'predicted' ? 1 : 0,
  };
}

export function groupKey(r: UsageRecord, by: GroupBy): string {
  switch (by) {
    case 'tenant':
      return r.tenant;
    case 'model':
      return r.model;
    case 'session':
      return r.sessionId;
    case 'worker':
      return r.worker;
    case 'day':
      return dayKey(r.time);
  }
}

export function ttftBucket(ms: number): number {
  let i = 0;
  while (i + 1 < TTFT_EDGES_MS.length && ms >= TTFT_EDGES_MS[i + 1]) i++;
  return i;
}

function matches(r: UsageRecord, q: ReportQuery): boolean {
  return (
    (q.since === undefined || r.time >= q.since) &&
    (q.until === undefined || r.time < q.until) &&
    (q.tenant === undefined || r.tenant === q.tenant)
  );
}

function into(map: Map<string | number, Sums>, key: string | number, s: Sums): void {
  const cur = map.get(key);
  if (cur) addSums(cur, s);
  else map.set(key, { ...s });
}

export async function aggregateRecords(
  records: Iterable<UsageRecord> | AsyncIterable<UsageRecord>,
  q: ReportQuery,
): Promise<ReportData> {
  const totals = emptySums();
  const groups = new Map<string | number, Sums>();
  const sessions = new Map<string | number, Sums>();
  const minutes = new Map<number, Sums>();
  const ttft = TTFT_EDGES_MS.map(() => 0);
  const breaks = new Map<string, number>();
  let first: number | null = null;
  let last: number | null = null;
  for await (const r of records) {
    if (!matches(r, q)) continue;
    const s = recordSums(r);
    addSums(totals, s);
    into(groups, groupKey(r, q.groupBy), s);
    into(sessions, r.sessionId, s);
    // Minute buckets are re-bucketed below once the span (and so the step) is known.
    into(minutes, Math.floor(r.time / 60_000) * 60_000, s);
    if (r.ttftMs !== null) ttft[ttftBucket(r.ttftMs)]++;
    if (r.breakCause) breaks.set(r.breakCause, (breaks.get(r.breakCause) ?? 0) + 1);
    first = first === null ? r.time : Math.min(first, r.time);
    last = last === null ? r.time : Math.max(last, r.time);
  }
  const bucketMs = pickBucketMs(first, last);
  const series = new Map<number, Sums>();
  for (const [t, s] of minutes) into(series, Math.floor(t / bucketMs) * bucketMs, s);
  const rows = (m: Map<string | number, Sums>): GroupRow[] => [...m].map(([key, s]) => ({ key: String(key), ...s }));
  return {
    generatedAt: Date.now(),
    query: q,
    firstTime: first,
    lastTime: last,
    totals,
    groups: sortGroups(rows(groups), q.groupBy),
    bucketMs,
    series: [...series].map(([t, s]) => ({ t: Number(t), ...s })).sort((a, b) => a.t - b.t),
    ttft: { edgesMs: [...TTFT_EDGES_MS], counts: ttft },
    topSessions: sortGroups(rows(sessions), 'session').slice(0, q.top ?? DEFAULT_TOP_SESSIONS),
    breaks: [...breaks]
      .map(([cause, count]) => ({ cause, count }))
      .sort((a, b) => b.count - a.count || a.cause.localeCompare(b.cause)),
  };
}
