// Text table of strategy results: one column per strategy, ratios to the first (full log).
import type { StrategyResult } from './evaluate.ts';

const int = (n: number) => Math.round(n).toLocaleString('en-US');
const pct = (n: number) => `${(n * 100).toFixed(1)}%`;

const ROWS: [string, (r: StrategyResult) => string][] = [
  ['calls', (r) => int(r.calls)],
  ['staged tokens / call (mean)', (r) => int(r.staged_tokens_per_call.mean)],
  ['staged tokens / call (max)', (r) => int(r.staged_tokens_per_call.max)],
  ['calls over budget', (r) => int(r.over_budget_calls)],
  ['compression ratio', (r) => `${r.compression_ratio.toFixed(2)}×`],
  ['hit rate', (r) => pct(r.hit_rate)],
  ['hit rate between compactions', (r) => pct(r.hit_rate_between_compactions)],
  ['prefilled tokens', (r) => int(r.prefill_tokens)],
  ['input cost', (r) => `$${r.cost_usd.toFixed(4)}`],
  ['verbatim retention', (r) => pct(r.verbatim_retention)],
  ['compactions', (r) => int(r.compactions)],
  ['constraint retention', (r) => (r.compactions ? pct(r.constraint_retention) : 'n/a')],
  ['stale exposure (calls)', (r) => `${int(r.stale_exposure_calls)} (${pct(r.stale_exposure_rate)})`],
];

export function formatStrategyTable(results: StrategyResult[]): string {
  const rows = [['', ...results.map((r) => r.strategy)], ...ROWS.map(([name, f]) => [name, ...results.map(f)])];
  if (results.length > 1) {
    const base = results[0];
    rows.push([
      'prefill vs first',
      ...results.map((r) => (base.prefill_tokens ? `×${(r.prefill_tokens / base.prefill_tokens).toFixed(2)}` : '-')),
    ]);
    rows.push([
      'cost vs first',
      ...results.map((r) => (base.cost_usd ? `×${(r.cost_usd / base.cost_usd).toFixed(2)}` : '-')),
    ]);
  }
  const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => r[c].length)));
  const line = (r: string[]) =>
    r.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]) : cell.padStart(widths[c]))).join('  ');
  const out = rows.map(line);
  out.splice(1, 0, widths.map((w) => '-'.repeat(w)).join('  '));
  return out.join('\n');
}
