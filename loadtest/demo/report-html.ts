// The demo's HTML report: one self-contained file (the reporting module's page shell and SVG
// charts) comparing the demo runs: cached vs prefilled tokens, hit rate, TTFT percentiles, cost,
// per-session hit rates and per-worker load, with the simulator caveat stated up front.
import { barChart, esc, lineChart, stackedBarChart } from '../../gateway/accounting/report/charts.ts';
import { renderHtmlPage } from '../../gateway/accounting/report/html.ts';
import type { RunSummary } from '../replay/types.ts';
import { savings, SIMULATOR_NOTE } from './summary.ts';

const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
const int = (n: number) => Math.round(n).toLocaleString('en-US');
const compact = (n: number) =>
  n >= 1e6 ? `${(n / 1e6).toFixed(1)}M` : n >= 1e3 ? `${(n / 1e3).toFixed(0)}k` : String(Math.round(n));

function comparisonTable(runs: RunSummary[]): string {
  const rows: [string, (r: RunSummary) => number, (n: number) => string][] = [
    ['requests', (r) => r.requests, int],
    ['prompt tokens', (r) => r.prompt_tokens, int],
    ['cached tokens', (r) => r.cached_tokens, int],
    ['hit rate', (r) => r.hit_rate, pct],
    ['prefilled tokens', (r) => r.prefill_tokens, int],
    ['input cost (USD)', (r) => r.input_cost_usd, (n) => `$${n.toFixed(4)}`],
    ['cost (USD)', (r) => r.cost_usd, (n) => `$${n.toFixed(4)}`],
    ['TTFT p50 (ms, modeled)', (r) => r.ttft_ms.p50, (n) => n.toFixed(1)],
    ['TTFT p95 (ms, modeled)', (r) => r.ttft_ms.p95, (n) => n.toFixed(1)],
    ['imbalance (max ÷ mean)', (r) => r.imbalance, (n) => n.toFixed(2)],
    ['errors', (r) => r.errors, int],
  ];
  const head = `<tr><th>metric</th>${runs.map((r) => `<th>${esc(r.config.label)}</th>`).join('')}${runs.length > 1 ? '<th>ratio</th>' : ''}</tr>`;
  const body = rows
    .map(([name, get, fmt]) => {
      const a = get(runs[0]);
      const b = get(runs[runs.length - 1]);
      const ratio = runs.length > 1 ? `<td>${a ? `×${(b / a).toFixed(2)}` : '–'}</td>` : '';
      return `<tr><td>${esc(name)}</td>${runs.map((r) => `<td data-v="${get(r)}">${esc(fmt(get(r)))}</td>`).join('')}${ratio}</tr>`;
    })
    .join('');
  return `<table class="sortable"><thead>${head}</thead><tbody>${body}</tbody></table>`;
}

export function renderDemoReport(
  runs: RunSummary[],
  meta: { sessions: number; calls: number; wallMs: number; workers: number; tokenizer: string },
): string {
  const labels = runs.map((r) => r.config.label);
  const s = savings(runs);
  const sessionIds = runs[0].per_session.map((p) => p.session.replace(/^synth-\d+-/, ''));
  const workerIds = runs[0].per_worker.map((w) => w.worker);
  const sections = [
    {
      title: 'How to read this',
      wide: true,
      html: `<p>${esc(SIMULATOR_NOTE)}</p><p>${esc(`${meta.sessions} synthetic agent sessions (${meta.calls} calls each run), ${meta.workers} reference workers, tokenizer ${meta.tokenizer}; every configuration replays identical traffic on a fresh fleet (cold caches). Ratios compare the last column with the first.`)}</p>`,
    },
    { title: 'Comparison', wide: true, html: comparisonTable(runs) },
    {
      title: 'Prompt tokens: cached vs prefilled',
      html: stackedBarChart({
        title: 'Prompt tokens',
        labels,
        stacks: [
          { name: 'cached', values: runs.map((r) => r.cached_tokens), color: '#16a34a' },
          { name: 'prefilled', values: runs.map((r) => r.prefill_tokens), color: '#dc2626' },
        ],
        yFormat: compact,
      }),
    },
    {
      title: 'Prefix-cache hit rate',
      html: barChart({
        title: 'Hit rate',
        bars: runs.map((r, i) => ({
          label: r.config.label,
          value: r.hit_rate * 100,
          color: i ? '#2563eb' : '#9ca3af',
        })),
        yFormat: (v) => `${v.toFixed(0)}%`,
      }),
    },
    {
      title: 'Modeled TTFT percentiles (ms)',
      html: lineChart({
        title: 'TTFT',
        labels: ['p50', 'p95', 'p99'],
        series: runs.map((r) => ({ name: r.config.label, values: [r.ttft_ms.p50, r.ttft_ms.p95, r.ttft_ms.p99] })),
        yFormat: (v) => `${v.toFixed(0)} ms`,
      }),
    },
    {
      title: 'Input cost (USD, default pricing; outputs are the same in both runs)',
      html: barChart({
        title: 'Input cost',
        bars: runs.map((r, i) => ({
          label: r.config.label,
          value: r.input_cost_usd,
          color: i ? '#2563eb' : '#9ca3af',
        })),
        yFormat: (v) => `$${v.toFixed(2)}`,
      }),
    },
    {
      title: 'Hit rate per session',
      wide: true,
      html: lineChart({
        title: 'Per-session hit rate',
        labels: sessionIds,
        series: runs.map((r) => ({ name: r.config.label, values: r.per_session.map((p) => p.hit_rate * 100) })),
        yMax: 100,
        yFormat: (v) => `${v.toFixed(0)}%`,
      }),
    },
    {
      title: 'Requests per worker',
      html: lineChart({
        title: 'Requests per worker',
        labels: workerIds,
        series: runs.map((r) => ({ name: r.config.label, values: r.per_worker.map((w) => w.requests) })),
        yFormat: (v) => v.toFixed(0),
      }),
    },
  ];
  return renderHtmlPage({
    title: 'ctxgate demo: the same agent traffic, passthrough vs ctxgate',
    subtitle: `${new Date().toISOString().slice(0, 19)}Z · ${(meta.wallMs / 1000).toFixed(1)} s · figures from the reference worker (a simulator), not a GPU`,
    tiles: [
      { label: 'hit rate', value: `${pct(runs[0].hit_rate)} → ${pct(runs[runs.length - 1].hit_rate)}` },
      { label: 'prefilled tokens saved', value: pct(s.prefillSaved) },
      { label: 'input cost saved', value: pct(s.inputCostSaved) },
      { label: 'cost saved', value: pct(s.costSaved) },
      {
        label: 'TTFT p95 (modeled)',
        value: `${runs[0].ttft_ms.p95.toFixed(0)} → ${runs[runs.length - 1].ttft_ms.p95.toFixed(0)} ms`,
      },
    ],
    sections,
  });
}
