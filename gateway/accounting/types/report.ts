// Report shapes shared by the SQL and in-memory aggregators, the renderers, the CLI and the route.
// Money stays in integer nano-dollars here; renderers convert to USD at the edge.

export const GROUP_BY = ['tenant', 'model', 'session', 'worker', 'day'] as const;
export type GroupBy = (typeof GROUP_BY)[number];
export const REPORT_FORMATS = ['md', 'csv', 'json', 'html', 'focus'] as const;
export type ReportFormat = (typeof REPORT_FORMATS)[number];

export interface ReportQuery {
  since?: number;
  until?: number;
  groupBy: GroupBy;
  tenant?: string;
  /** Rows in topSessions (default DEFAULT_TOP_SESSIONS). */
  top?: number;
}

/** Sums over a set of records. Money in nano-dollars. */
export interface Sums {
  requests: number;
  promptTokens: number;
  cachedTokens: number;
  predictedCachedTokens: number;
  outputTokens: number;
  costUncachedNusd: number;
  costCachedNusd: number;
  costWriteNusd: number;
  costOutputNusd: number;
  costNusd: number;
  cfNoCacheNusd: number;
  /** Estimated cost with the agent's original prompt layout (actual cost where no estimate). */
  cfOriginalNusd: number;
  savingsNusd: number;
  /** savingsNusd by cause (sum to savingsNusd). */
  savingsLayoutNusd: number;
  savingsRoutingNusd: number;
  savingsEngineNusd: number;
  errors: number;
  /** Failed requests billed because the worker reported usage for them. */
  billedFailures: number;
  predictedUsage: number;
}

export interface GroupRow extends Sums {
  key: string;
}

export interface SeriesPoint extends Sums {
  /** Bucket start, epoch ms. */
  t: number;
}

export interface ReportData {
  generatedAt: number;
  query: ReportQuery;
  /** Earliest and latest record time seen (null when empty). */
  firstTime: number | null;
  lastTime: number | null;
  totals: Sums;
  groups: GroupRow[];
  bucketMs: number;
  series: SeriesPoint[];
  /** TTFT histogram: counts[i] = records with edgesMs[i] <= ttft < edgesMs[i+1] (last bucket open). */
  ttft: { edgesMs: number[]; counts: number[] };
  topSessions: GroupRow[];
  breaks: { cause: string; count: number }[];
}

export const DEFAULT_TOP_SESSIONS = 10;
export const TTFT_EDGES_MS = [0, 25, 50, 100, 200, 400, 800, 1600, 3200, 6400, 12800];
/** Bucket widths for the time series; the smallest giving ≤ MAX_SERIES_POINTS points is used. */
export const SERIES_STEPS_MS = [60_000, 300_000, 900_000, 3_600_000, 21_600_000, 86_400_000, 604_800_000];
export const MAX_SERIES_POINTS = 120;
export const DAY_MS = 86_400_000;

export function emptySums(): Sums {
  return {
    requests: 0,
    promptTokens: 0,
    cachedTokens: 0,
    predictedCachedTokens: 0,
    outputTokens: 0,
    costUncachedNusd: 0,
    costCachedNusd: 0,
    costWriteNusd: 0,
    costOutputNusd: 0,
    costNusd: 0,
    cfNoCacheNusd: 0,
    cfOriginalNusd: 0,
    savingsNusd: 0,
    savingsLayoutNusd: 0,
    savingsRoutingNusd: 0,
    savingsEngineNusd: 0,
    errors: 0,
    billedFailures: 0,
    predictedUsage: 0,
  };
}

export function addSums(into: Sums, s: Sums): void {
  for (const k of Object.keys(into) as (keyof Sums)[]) into[k] += s[k];
}

export function hitRate(s: Pick<Sums, 'promptTokens' | 'cachedTokens'>): number {
  return s.promptTokens > 0 ? s.cachedTokens / s.promptTokens : 0;
}

export function pickBucketMs(first: number | null, last: number | null): number {
  if (first === null || last === null) return SERIES_STEPS_MS[0];
  const span = Math.max(1, last - first);
  for (const step of SERIES_STEPS_MS) if (span / step <= MAX_SERIES_POINTS) return step;
  return SERIES_STEPS_MS[SERIES_STEPS_MS.length - 1];
}

export function dayKey(t: number): string {
  return new Date(Math.floor(t / DAY_MS) * DAY_MS).toISOString().slice(0, 10);
}

/** One order of report groups for every producer (JS and SQL): days in time order, everything
 * else by spend, biggest first. */
export function sortGroups(rows: GroupRow[], by: GroupBy): GroupRow[] {
  return by === 'day'
    ? rows.sort((a, b) => a.key.localeCompare(b.key))
    : rows.sort((a, b) => b.costNusd - a.costNusd || a.key.localeCompare(b.key));
}
