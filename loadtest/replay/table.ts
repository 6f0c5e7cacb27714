// Side-by-side text table of run summaries, with each figure's ratio to the first run.
import type { RunSummary } from './types.ts';

const int = (n: number) => Math.round(n).toLocaleString('en-US');
const pct = (n: number) => `${(n * 100).toFixed(1)}%`;
const usd = (n: number) => `$${n < 1 ? n.toFixed(4) : n.toFixed(2)}`;
const intOrNa = (n: number) => (Number.isNaN(n) ? 'n/a' : int(n));
const ms = (n: number) => `${n.toFixed(n < 10 ? 1 : 0)} ms`;

interface Row {
  name: string;
  get: (r: RunSummary) => number;
  fmt: (n: number) => string;
  ratio: boolean;
}

const ROWS: Row[] = [
  { name: 'requests', get: (r) => r.requests, fmt: int, ratio: false },
  { name: 'sessions', get: (r) => r.sessions, fmt: int, ratio: false },
  { name: 'prompt tokens', get: (r) => r.prompt_tokens, fmt: int, ratio: true },
  { name: 'cached tokens', get: (r) => r.cached_tokens, fmt: int, ratio: true },
  { name: 'hit rate', get: (r) => r.hit_rate, fmt: pct, ratio: true },
  { name: 'prefill tokens', get: (r) => r.prefill_tokens, fmt: int, ratio: true },
  { name: 'input cost', get: (r) => r.input_cost_usd, fmt: usd, ratio: true },
  { name: 'cost', get: (r) => r.cost_usd, fmt: usd, ratio: true },
  { name: 'ttft p50', get: (r) => r.ttft_ms.p50, fmt: ms, ratio: true },
  { name: 'ttft p95', get: (r) => r.ttft_ms.p95, fmt: ms, ratio: true },
  { name: 'ttft p99', get: (r) => r.ttft_ms.p99, fmt: ms, ratio: true },
  { name: 'imbalance', get: (r) => r.imbalance, fmt: (n) => n.toFixed(2), ratio: false },
  { name: 'errors', get: (r) => r.errors, fmt: int, ratio: false },
  { name: 'lossless: missing lines', get: (r) => r.lossless?.missing ?? NaN, fmt: intOrNa, ratio: false },
  { name: 'lossless: altered lines', get: (r) => r.lossless?.altered ?? NaN, fmt: intOrNa, ratio: false },
  {
    name: 'lossless: first calls changed',
    get: (r) => r.lossless?.first_call_changed ?? NaN,
    fmt: intOrNa,
    ratio: false,
  },
];

export function formatTable(runs: RunSummary[]): string {
  if (!runs.length) return '(no runs)';
  const header = ['', ...runs.map((r) => r.config.label)];
  const rows: string[][] = [header];
  for (const row of ROWS) {
    const base = row.get(runs[0]);
    rows.push([
      row.name,
      ...runs.map((r, i) => {
        const v = row.get(r);
        const cell = row.fmt(v);
        if (i === 0 || !row.ratio || base === 0) return cell;
        return `${cell} (×${(v / base).toFixed(2)})`;
      }),
    ]);
  }
  const widths = header.map((_, c) => Math.max(...rows.map((r) => r[c].length)));
  const line = (r: string[]) =>
    r.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]) : cell.padStart(widths[c]))).join('  ');
  const out = rows.map(line);
  out.splice(1, 0, widths.map((w) => '-'.repeat(w)).join('  '));
  const ttft =
    runs[0].ttft_source === 'modeled'
      ? 'TTFT modeled by the reference worker (x-sim-timing), not measured on a GPU'
      : 'TTFT measured end to end';
  out.push('', `ratios (×) are to the first column; ${ttft}.`);
  const lost = runs.flatMap((r) => (r.lossless?.samples ?? []).map((e) => `  ${r.config.label}: ${e}`));
  if (lost.length) out.push('lossless findings:', ...lost);
  const errs = runs.flatMap((r) => r.error_samples.map((e) => `  ${r.config.label}: ${e}`));
  if (errs.length) out.push('errors:', ...errs);
  return out.join('\n');
}
