// Builds a report from a ledger (SQL when the store supports it, else a streaming in-memory
// aggregation) and renders it in the requested format.
import type { UsageLedger } from '../types/ledger.ts';
import { aggregateRecords } from './aggregate.ts';
import { renderCsv, renderJson, renderMarkdown } from './format.ts';
import { renderFocus } from './focus.ts';
import { renderHtmlReport } from './html.ts';
import type { ReportData, ReportFormat, ReportQuery } from '../types/report.ts';

export async function buildReport(ledger: UsageLedger, q: ReportQuery): Promise<ReportData> {
  // Records still queued in this process belong in the answer (a no-op for read-only ledgers).
  await ledger.flush();
  if (ledger.report) return ledger.report(q);
  return aggregateRecords(ledger.query({ since: q.since, until: q.until, tenant: q.tenant }), q);
}

export const CONTENT_TYPES: Record<ReportFormat, string> = {
  json: 'application/json; charset=utf-8',
  csv: 'text/csv; charset=utf-8',
  md: 'text/markdown; charset=utf-8',
  html: 'text/html; charset=utf-8',
  focus: 'text/csv; charset=utf-8',
};

/** The report of `q` in `format`: FOCUS rows come from the records, every other format from the aggregate. */
export async function produceReport(ledger: UsageLedger, q: ReportQuery, format: ReportFormat): Promise<string> {
  if (format === 'focus') return renderFocus(ledger, q);
  return renderReport(await buildReport(ledger, q), format);
}

export function renderReport(d: ReportData, format: Exclude<ReportFormat, 'focus'>): string {
  switch (format) {
    case 'json':
      return renderJson(d);
    case 'csv':
      return renderCsv(d);
    case 'md':
      return renderMarkdown(d);
    case 'html':
      return renderHtmlReport(d);
  }
}

/** Parses a time bound: epoch ms, ISO date/time, or a relative `-24h` / `-7d` / `-30m`. */
export function parseTime(s: string, now = Date.now()): number {
  const rel = /^-(\d+(?:\.\d+)?)([smhd])$/.exec(s.trim());
  if (rel) return now - Number(rel[1]) * { s: 1e3, m: 6e4, h: 3.6e6, d: 8.64e7 }[rel[2] as 's' | 'm' | 'h' | 'd'];
  if (/^\d{10,}$/.test(s.trim())) return Number(s);
  const t = Date.parse(s);
  if (Number.isNaN(t)) throw new Error(`invalid time '${s}' (use ISO 8601, epoch ms, or -24h / -7d)`);
  return t;
}
