// Report aggregation in SQL (GROUP BY) over the SQLite ledger, so a report over millions of rows
// never materializes the rows in JS. Same semantics as report/aggregate.ts (tested against it).
// Cost: one indexed MIN/MAX, two sorted GROUP BY scans and one unsorted scan of the filtered range.
import type Database from 'better-sqlite3';
import {
  DAY_MS,
  DEFAULT_TOP_SESSIONS,
  TTFT_EDGES_MS,
  dayKey,
  pickBucketMs,
  type GroupBy,
  sortGroups,
  type GroupRow,
  type ReportData,
  type ReportQuery,
  type Sums,
  emptySums,
  addSums,
} from '../types/report.ts';

const SUMS_SQL = `COUNT(*) AS requests, SUM(prompt_tokens) AS promptTokens, SUM(cached_tokens) AS cachedTokens,
  TOTAL(predicted_cached_tokens) AS predictedCachedTokens, SUM(output_tokens) AS outputTokens,
  SUM(cost_uncached_nusd) AS costUncachedNusd, SUM(cost_cached_nusd) AS costCachedNusd, SUM(cost_write_nusd) AS costWriteNusd,
  SUM(cost_output_nusd) AS costOutputNusd, SUM(cost_nusd) AS costNusd, SUM(cf_nocache_nusd) AS cfNoCacheNusd,
  SUM(COALESCE(cf_original_nusd, cost_nusd)) AS cfOriginalNusd,
  SUM(savings_nusd) AS savingsNusd, SUM(savings_layout_nusd) AS savingsLayoutNusd, SUM(savings_routing_nusd) AS savingsRoutingNusd,
  SUM(savings_engine_nusd) AS savingsEngineNusd, SUM(status >= 400) AS errors, SUM(billing = 'billed_failure') AS billedFailures,
  SUM(usage_source = 'predicted') AS predictedUsage`;

const KEY_SQL: Record<GroupBy, string> = {
  tenant: 'tenant',
  model: 'model',
  session: 'session_id',
  worker: 'worker',
  day: `(time / ${DAY_MS})`,
};

type SumsRow = Record<keyof Sums, number | null> & { k?: string | number };

function toSums(r: SumsRow): Sums {
  const s = emptySums();
  for (const k of Object.keys(s) as (keyof Sums)[]) s[k] = Number(r[k] ?? 0);
  return s;
}

function where(q: ReportQuery): { sql: string; params: Record<string, string | number> } {
  const parts: string[] = [];
  const params: Record<string, string | number> = {};
  if (q.since !== undefined) {
    parts.push('time >= @since');
    params.since = q.since;
  }
  if (q.until !== undefined) {
    parts.push('time < @until');
    params.until = q.until;
  }
  if (q.tenant !== undefined) {
    parts.push('tenant = @tenant');
    params.tenant = q.tenant;
  }
  return { sql: parts.length ? `WHERE ${parts.join(' AND ')}` : '', params };
}

// TTFT histogram counts folded into the main scan as one SUM per bucket (NULL ttft counts nowhere).
function ttftSums(): string {
  return TTFT_EDGES_MS.map((lo, i) => {
    const hi = TTFT_EDGES_MS[i + 1];
    return `TOTAL(ttft_ms >= ${lo}${hi === undefined ? '' : ` AND ttft_ms < ${hi}`}) AS tt${i}`;
  }).join(', ');
}

type MainRow = SumsRow & { t: number } & Record<string, number | string | null>;

export function sqliteReport(db: Database.Database, q: ReportQuery): ReportData {
  const w = where(q);
  const all = <T>(sql: string): T[] => db.prepare(sql).all(w.params) as T[];

  const span = all<{ lo: number | null; hi: number | null }>(
    `SELECT MIN(time) AS lo, MAX(time) AS hi FROM usage ${w.sql}`,
  )[0];
  const first = span?.lo ?? null;
  const last = span?.hi ?? null;
  // Inlined, not bound: better-sqlite3 binds JS numbers as REAL, which would make `/` a float division.
  const bucketMs = Math.floor(pickBucketMs(first, last));
  const top = Math.max(0, Math.floor(q.top ?? DEFAULT_TOP_SESSIONS));
  const keyOf = (k: string | number | undefined): string =>
    q.groupBy === 'day' ? dayKey(Number(k) * DAY_MS) : String(k);

  // SQLite aggregates by sorting, so every GROUP BY scan costs a sort of the range: this plan
  // uses two sorted scans. Other groupings: one scan by (key, time bucket) yields groups, totals,
  // series and TTFT; a second ranks sessions. By session: one scan by session, one by bucket.
  const groupMap = new Map<string, Sums>();
  const seriesMap = new Map<number, Sums>();
  const counts = TTFT_EDGES_MS.map(() => 0);
  const addTo = <K>(m: Map<K, Sums>, k: K, s: Sums): void => {
    const cur = m.get(k);
    if (cur) addSums(cur, s);
    else m.set(k, { ...s });
  };
  const addTtft = (r: MainRow): void => TTFT_EDGES_MS.forEach((_, i) => (counts[i] += Number(r[`tt${i}`] ?? 0)));
  const bucket = `(time / ${bucketMs}) * ${bucketMs}`;
  let topRows: SumsRow[];
  if (q.groupBy === 'session') {
    for (const r of all<SumsRow>(`SELECT session_id AS k, ${SUMS_SQL} FROM usage ${w.sql} GROUP BY session_id`))
      groupMap.set(String(r.k), toSums(r));
    for (const r of all<MainRow>(`SELECT ${bucket} AS t, ${SUMS_SQL}, ${ttftSums()} FROM usage ${w.sql} GROUP BY t`)) {
      seriesMap.set(Number(r.t), toSums(r));
      addTtft(r);
    }
    topRows = [];
  } else {
    for (const r of all<MainRow>(
      `SELECT ${KEY_SQL[q.groupBy]} AS k, ${bucket} AS t, ${SUMS_SQL}, ${ttftSums()} FROM usage ${w.sql} GROUP BY k, t`,
    )) {
      const s = toSums(r);
      addTo(groupMap, keyOf(r.k), s);
      addTo(seriesMap, Number(r.t), s);
      addTtft(r);
    }
    // Rank on cost alone (a narrow sort), then sum the few winners in full: ~30% cheaper than
    // sorting every column of every row by session.
    const ranked = top
      ? all<{ k: string }>(
          `SELECT session_id AS k, SUM(cost_nusd) AS c FROM usage ${w.sql} GROUP BY session_id ORDER BY c DESC, session_id ASC LIMIT ${top}`,
        )
      : [];
    const full = new Map<string, SumsRow>();
    if (ranked.length) {
      const ids = ranked.map((r) => r.k);
      const inSql = `${w.sql ? `${w.sql} AND` : 'WHERE'} session_id IN (${ids.map((_, i) => `@s${i}`).join(', ')})`;
      const params: Record<string, string | number> = { ...w.params };
      ids.forEach((id, i) => (params[`s${i}`] = id));
      const rows = db
        .prepare(`SELECT session_id AS k, ${SUMS_SQL} FROM usage ${inSql} GROUP BY session_id`)
        .all(params) as SumsRow[];
      for (const r of rows) full.set(String(r.k), r);
    }
    topRows = ranked.map((r) => full.get(r.k)!).filter(Boolean);
  }
  const groups: GroupRow[] = sortGroups(
    [...groupMap].map(([key, s]) => ({ key, ...s })),
    q.groupBy,
  );
  const totals = emptySums();
  for (const g of groups) addSums(totals, g);
  const topSessions =
    q.groupBy === 'session' ? groups.slice(0, top) : topRows.map((r) => ({ key: String(r.k), ...toSums(r) }));

  const bw = w.sql ? `${w.sql} AND break_cause IS NOT NULL` : 'WHERE break_cause IS NOT NULL';
  const breaks = all<{ cause: string; count: number }>(
    `SELECT break_cause AS cause, COUNT(*) AS count FROM usage ${bw} GROUP BY break_cause`,
  ).sort((a, b) => b.count - a.count || a.cause.localeCompare(b.cause));

  return {
    generatedAt: Date.now(),
    query: q,
    firstTime: first,
    lastTime: last,
    totals,
    groups,
    bucketMs,
    series: [...seriesMap].sort((a, b) => a[0] - b[0]).map(([t, s]) => ({ t, ...s })),
    ttft: { edgesMs: [...TTFT_EDGES_MS], counts },
    topSessions,
    breaks,
  };
}
