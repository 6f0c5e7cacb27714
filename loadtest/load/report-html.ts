// `ctxgate loadtest --out FILE.html`: one self-contained page in the look of the demo and FinOps
// reports (the reporting module's page shell and SVG charts): totals per target, latency and
// TTFT percentiles, hit rate, errors by status and the per-session table.
import { barChart, esc, lineChart } from '../../gateway/accounting/report/charts.ts';
import { renderHtmlPage } from '../../gateway/accounting/report/html.ts';
import type { LoadSummary } from './summary.ts';

const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
const int = (n: number) => Math.round(n).toLocaleString('en-US');

function totalsTable(runs: LoadSummary[]): string {
  const rows: [string, (r: LoadSummary) => number | null, (n: number) => string][] = [
    ['requests', (r) => r.requests, int],
    ['requests/s', (r) => r.rps, (n) => n.toFixed(1)],
    ['errors', (r) => r.requests - r.ok, int],
    ['latency p50 (ms)', (r) => r.latency_ms.p50, (n) => n.toFixed(1)],
    ['latency p90 (ms)', (r) => r.latency_ms.p90, (n) => n.toFixed(1)],
    ['latency p99 (ms)', (r) => r.latency_ms.p99, (n) => n.toFixed(1)],
    ['TTFT p50 (ms)', (r) => r.ttft_ms?.p50 ?? null, (n) => n.toFixed(1)],
    ['TTFT p90 (ms)', (r) => r.ttft_ms?.p90 ?? null, (n) => n.toFixed(1)],
    ['output tokens/s', (r) => r.output_tok_s, (n) => n.toFixed(0)],
    ['prompt tokens', (r) => r.prompt_tokens, int],
    ['cached tokens', (r) => r.cached_tokens, int],
    ['hit rate', (r) => r.hit_rate, pct],
  ];
  const head = `<tr><th>metric</th>${runs.map((r) => `<th>${esc(r.target)}</th>`).join('')}</tr>`;
  const body = rows
    .map(
      ([name, get, f]) =>
        `<tr><td>${esc(name)}</td>${runs
          .map((r) => {
            const v = get(r);
            return v === null ? '<td>–</td>' : `<td data-v="${v}">${esc(f(v))}</td>`;
          })
          .join('')}</tr>`,
    )
    .join('');
  return `<table class="sortable"><thead>${head}</thead><tbody>${body}</tbody></table>`;
}

function sessionsTable(r: LoadSummary): string {
  const head =
    '<tr><th>session</th><th>requests</th><th>errors</th><th>prompt tokens</th><th>cached</th><th>hit rate</th></tr>';
  const body = r.sessions
    .map(
      (s) =>
        `<tr><td>${esc(s.session)}</td><td data-v="${s.requests}">${s.requests}</td><td data-v="${s.errors}">${s.errors}</td><td data-v="${s.prompt_tokens}">${int(s.prompt_tokens)}</td><td data-v="${s.cached_tokens}">${int(s.cached_tokens)}</td><td data-v="${s.hit_rate}">${pct(s.hit_rate)}</td></tr>`,
    )
    .join('');
  return `<table class="sortable"><thead>${head}</thead><tbody>${body}</tbody></table>`;
}

export function renderLoadReport(runs: LoadSummary[], meta: { connections: number; traffic: string }): string {
  const labels = runs.map((r) => r.target);
  const sections = [
    { title: 'Totals', wide: true, html: totalsTable(runs) },
    {
      title: 'Latency percentiles (ms, client side)',
      html: lineChart({
        title: 'Latency',
        labels: ['p50', 'p90', 'p99'],
        series: runs.map((r) => ({ name: r.target, values: [r.latency_ms.p50, r.latency_ms.p90, r.latency_ms.p99] })),
        yFormat: (v) => `${v.toFixed(0)} ms`,
      }),
    },
    {
      title: "Prefix-cache hit rate (from the answers' usage)",
      html: barChart({
        title: 'Hit rate',
        bars: runs.map((r, i) => ({ label: r.target, value: r.hit_rate * 100, color: i ? '#2563eb' : '#9ca3af' })),
        yFormat: (v) => `${v.toFixed(0)}%`,
      }),
    },
    ...(runs.some((r) => r.ttft_ms)
      ? [
          {
            title: 'TTFT percentiles (ms, first body byte)',
            html: lineChart({
              title: 'TTFT',
              labels: ['p50', 'p90', 'p99'],
              series: runs
                .filter((r) => r.ttft_ms)
                .map((r) => ({ name: r.target, values: [r.ttft_ms!.p50, r.ttft_ms!.p90, r.ttft_ms!.p99] })),
              yFormat: (v) => `${v.toFixed(0)} ms`,
            }),
          },
        ]
      : []),
    {
      title: 'Errors by status',
      html: `<table><tbody>${runs
        .map(
          (r) =>
            `<tr><td>${esc(r.target)}</td><td>${esc(
              Object.entries(r.errors)
                .map(([k, v]) => `${k}: ${v}`)
                .join(', ') || 'none',
            )}</td></tr>`,
        )
        .join('')}</tbody></table>`,
    },
    ...runs.map((r) => ({ title: `Sessions — ${r.target}`, wide: true, html: sessionsTable(r) })),
  ];
  return renderHtmlPage({
    title: `ctxgate loadtest: ${labels.join(' vs ')}`,
    subtitle: `${new Date().toISOString().slice(0, 19)}Z · ${meta.connections} connections · ${meta.traffic}`,
    tiles: runs.flatMap((r) => [
      { label: `req/s — ${r.target}`, value: r.rps.toFixed(1) },
      { label: `hit rate — ${r.target}`, value: pct(r.hit_rate) },
    ]),
    sections,
  });
}
