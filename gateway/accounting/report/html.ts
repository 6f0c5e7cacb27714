// The HTML report: ONE self-contained file (inline CSS, inline SVG charts, a few lines of inline
// JS for table sorting), readable from disk without a server or network.
// renderHtmlPage() is the generic shell, exported so other reports (the demo's comparison) can
// reuse the same look with their own sections built from charts.ts.
import { formatUsd, NANO_PER_USD } from '../types/money.ts';
import { esc, histogram, lineChart, stackedBarChart, barChart, PALETTE } from './charts.ts';
import { hitRate, type GroupRow, type ReportData } from '../types/report.ts';

export interface HtmlSection {
  title: string;
  /** Trusted HTML (charts, tables) placed as-is. */
  html: string;
  wide?: boolean;
}

export interface HtmlPage {
  title: string;
  subtitle?: string;
  tiles?: { label: string; value: string }[];
  sections: HtmlSection[];
}

const CSS = `
*{box-sizing:border-box}
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:0;background:#f9fafb;color:#111827}
header{padding:20px 28px;background:#111827;color:#f9fafb}header h1{margin:0;font-size:20px}header p{margin:4px 0 0;color:#9ca3af;font-size:13px}
.tiles{display:flex;flex-wrap:wrap;gap:12px;padding:16px 28px}.tile{background:#fff;border:1px solid #e5e7eb;border-radius:8px;padding:10px 16px;min-width:130px}
.tile .v{font-size:20px;font-weight:600}.tile .l{font-size:12px;color:#6b7280}
main{display:flex;flex-wrap:wrap;gap:16px;padding:0 28px 28px}section{background:#fff;border:1px solid #e5e7eb;border-radius:8px;padding:12px 16px;flex:1 1 600px;max-width:100%;overflow-x:auto}
section.wide{flex-basis:100%}section h2{font-size:14px;margin:0 0 8px}svg.ctx-chart{width:100%;max-width:720px;height:auto}
table{border-collapse:collapse;font-size:12px;width:100%}th,td{padding:4px 8px;border-bottom:1px solid #f3f4f6;text-align:right}th:first-child,td:first-child{text-align:left}
th{cursor:pointer;background:#f9fafb;user-select:none}.empty{color:#6b7280;font-size:13px}
`;

// Click a header to sort by that column (numbers numerically, via data-v).
const JS = `document.querySelectorAll('table.sortable th').forEach((th,i)=>th.addEventListener('click',()=>{const tb=th.closest('table').tBodies[0];const rows=[...tb.rows];const dir=th.dataset.dir==='d'?1:-1;th.dataset.dir=dir===1?'a':'d';rows.sort((a,b)=>{const x=a.cells[i].dataset.v??a.cells[i].textContent,y=b.cells[i].dataset.v??b.cells[i].textContent;const nx=Number(x),ny=Number(y);return (isNaN(nx)||isNaN(ny)?String(x).localeCompare(String(y)):nx-ny)*dir;});rows.forEach(r=>tb.appendChild(r));}));`;

export function renderHtmlPage(p: HtmlPage): string {
  const tiles = (p.tiles ?? [])
    .map((t) => `<div class="tile"><div class="v">${esc(t.value)}</div><div class="l">${esc(t.label)}</div></div>`)
    .join('');
  const sections = p.sections
    .map((s) => `<section${s.wide ? ' class="wide"' : ''}><h2>${esc(s.title)}</h2>${s.html}</section>`)
    .join('\n');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${esc(p.title)}</title><style>${CSS}</style></head>
<body><header><h1>${esc(p.title)}</h1>${p.subtitle ? `<p>${esc(p.subtitle)}</p>` : ''}</header>
<div class="tiles">${tiles}</div>
<main>
${sections}
</main>
<script>${JS}</script>
</body></html>
`;
}

const pct = (x: number): string => `${(x * 100).toFixed(1)}%`;
const usd = (nusd: number): number => nusd / NANO_PER_USD;
const usdFmt = (v: number): string => formatUsd(v * NANO_PER_USD);
const empty = (what: string): string => `<p class="empty">No ${esc(what)} in this range.</p>`;

function bucketLabel(t: number, bucketMs: number): string {
  const iso = new Date(t).toISOString();
  return bucketMs >= 86_400_000 ? iso.slice(5, 10) : iso.slice(11, 16);
}

/** Sortable table of report groups; data-v keeps exact numbers for sorting. */
export function groupTable(rows: GroupRow[], keyName: string): string {
  const td = (v: number, shown: string): string => `<td data-v="${v}">${esc(shown)}</td>`;
  const body = rows
    .map(
      (g) =>
        `<tr><td>${esc(g.key || '(none)')}</td>${td(g.requests, g.requests.toLocaleString('en-US'))}${td(g.promptTokens, g.promptTokens.toLocaleString('en-US'))}` +
        `${td(g.cachedTokens, g.cachedTokens.toLocaleString('en-US'))}${td(hitRate(g), pct(hitRate(g)))}${td(g.outputTokens, g.outputTokens.toLocaleString('en-US'))}` +
        `${td(g.costNusd, formatUsd(g.costNusd))}${td(g.savingsNusd, formatUsd(g.savingsNusd))}${td(g.savingsLayoutNusd, formatUsd(g.savingsLayoutNusd))}` +
        `${td(g.savingsRoutingNusd, formatUsd(g.savingsRoutingNusd))}${td(g.savingsEngineNusd, formatUsd(g.savingsEngineNusd))}</tr>`,
    )
    .join('');
  return `<table class="sortable"><thead><tr><th>${esc(keyName)}</th><th>requests</th><th>prompt</th><th>cached</th><th>hit rate</th><th>output</th><th>cost</th><th>saved</th><th>by layout</th><th>by routing</th><th>by engine</th></tr></thead><tbody>${body}</tbody></table>`;
}

export function renderHtmlReport(d: ReportData, opts: { title?: string } = {}): string {
  const t = d.totals;
  const labels = d.series.map((p) => bucketLabel(p.t, d.bucketMs));
  const hit = d.series.length
    ? lineChart({
        title: 'Prefix-cache hit rate over time',
        labels,
        yMax: 1,
        yFormat: pct,
        series: [
          {
            name: 'reported cached / prompt',
            values: d.series.map((p) => (p.promptTokens ? p.cachedTokens / p.promptTokens : null)),
          },
          {
            name: 'predicted cached / prompt',
            values: d.series.map((p) => (p.promptTokens ? p.predictedCachedTokens / p.promptTokens : null)),
            color: PALETTE[2],
          },
        ],
      })
    : empty('requests');
  const cost = d.series.length
    ? stackedBarChart({
        title: 'Cost by kind, with savings from caching (bar height = cost without cache)',
        labels,
        yFormat: usdFmt,
        stacks: [
          { name: 'uncached input', values: d.series.map((p) => usd(p.costUncachedNusd)), color: PALETTE[0] },
          { name: 'cached input', values: d.series.map((p) => usd(p.costCachedNusd)), color: PALETTE[5] },
          { name: 'cache write', values: d.series.map((p) => usd(p.costWriteNusd)), color: PALETTE[4] },
          { name: 'output', values: d.series.map((p) => usd(p.costOutputNusd)), color: PALETTE[2] },
          { name: 'saved', values: d.series.map((p) => usd(Math.max(0, p.savingsNusd))), color: '#bbf7d0' },
        ],
      })
    : empty('cost');
  // What ctxgate's own actions saved (layout, routing) next to what the engine's cache gives anyway.
  const causes =
    t.savingsNusd > 0
      ? barChart({
          title: 'Saved by cause',
          yFormat: usdFmt,
          bars: [
            { label: 'layout', value: usd(t.savingsLayoutNusd), color: PALETTE[0] },
            { label: 'routing', value: usd(t.savingsRoutingNusd), color: PALETTE[1] },
            { label: 'engine', value: usd(t.savingsEngineNusd), color: PALETTE[5] },
          ],
        })
      : empty('savings');
  const ttftTotal = d.ttft.counts.reduce((a, b) => a + b, 0);
  const ttft = ttftTotal
    ? histogram({ title: 'Time to first token (ms)', edges: d.ttft.edgesMs, counts: d.ttft.counts })
    : empty('TTFT samples');
  const top = d.topSessions.length
    ? barChart({
        title: `Top ${d.topSessions.length} sessions by cost`,
        yFormat: usdFmt,
        bars: d.topSessions.map((s) => ({
          label: s.key.length > 12 ? s.key.slice(0, 11) + '…' : s.key || '(none)',
          value: usd(s.costNusd),
          color: PALETTE[4],
        })),
      })
    : empty('sessions');
  const breaks = d.breaks.length
    ? barChart({
        title: 'Cache breaks by cause',
        bars: d.breaks.map((b) => ({ label: b.cause, value: b.count, color: PALETTE[3] })),
      })
    : empty('cache breaks');
  const range = `${new Date(d.query.since ?? d.firstTime ?? d.generatedAt).toISOString()} .. ${new Date(d.query.until ?? d.lastTime ?? d.generatedAt).toISOString()}`;
  return renderHtmlPage({
    title: opts.title ?? 'ctxgate usage report',
    subtitle: `${range}${d.query.tenant ? ` · tenant ${d.query.tenant}` : ''} · generated ${new Date(d.generatedAt).toISOString()}`,
    tiles: [
      { label: 'requests', value: t.requests.toLocaleString('en-US') },
      { label: 'cost', value: formatUsd(t.costNusd) },
      { label: 'saved by caching', value: formatUsd(t.savingsNusd) },
      { label: 'saved by layout', value: formatUsd(t.savingsLayoutNusd) },
      { label: 'saved by routing', value: formatUsd(t.savingsRoutingNusd) },
      { label: 'saved by the engine anyway', value: formatUsd(t.savingsEngineNusd) },
      { label: 'cost without cache', value: formatUsd(t.cfNoCacheNusd) },
      { label: 'cost with original layout (est.)', value: formatUsd(t.cfOriginalNusd) },
      { label: 'hit rate', value: pct(hitRate(t)) },
      { label: 'prompt tokens', value: t.promptTokens.toLocaleString('en-US') },
      { label: 'output tokens', value: t.outputTokens.toLocaleString('en-US') },
    ],
    sections: [
      { title: 'Hit rate', html: hit },
      { title: 'Cost', html: cost },
      { title: 'Savings by cause', html: causes },
      { title: 'TTFT distribution', html: ttft },
      { title: 'Top sessions', html: top },
      { title: 'Cache breaks', html: breaks },
      { title: `By ${d.query.groupBy}`, html: groupTable(d.groups, d.query.groupBy), wide: true },
    ],
  });
}
