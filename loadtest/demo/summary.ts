// The demo's console summary: the replay comparison table plus the savings in words and the
// simulator caveat.
import { formatTable } from '../replay/table.ts';
import type { RunSummary } from '../replay/types.ts';

export const SIMULATOR_NOTE =
  "Figures come from ctxgate's reference worker: a simulator with a real prefix cache (vLLM-style hashed blocks), the real tokenizer and chat template, and a modeled latency — not a real GPU. Token counts and hit rates are exact for this traffic; TTFT is modeled.";

export interface Savings {
  prefillSaved: number;
  costSaved: number;
  /** Prompt side only: outputs are the same in every run, so this is what the layout saves. */
  inputCostSaved: number;
  prefillRatio: number;
  ttftP95Ratio: number;
}

/** Last configuration against the first (the baseline). */
export function savings(runs: RunSummary[]): Savings {
  const a = runs[0];
  const b = runs[runs.length - 1];
  const frac = (x: number, y: number) => (y > 0 ? 1 - x / y : 0);
  return {
    prefillSaved: frac(b.prefill_tokens, a.prefill_tokens),
    costSaved: frac(b.cost_usd, a.cost_usd),
    inputCostSaved: frac(b.input_cost_usd, a.input_cost_usd),
    prefillRatio: b.prefill_tokens > 0 ? a.prefill_tokens / b.prefill_tokens : 0,
    ttftP95Ratio: b.ttft_ms.p95 > 0 ? a.ttft_ms.p95 / b.ttft_ms.p95 : 0,
  };
}

export function formatDemoSummary(runs: RunSummary[]): string {
  const s = savings(runs);
  const a = runs[0];
  const b = runs[runs.length - 1];
  const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
  return [
    formatTable(runs),
    '',
    `${b.config.label} vs ${a.config.label}: hit rate ${pct(a.hit_rate)} → ${pct(b.hit_rate)}, ` +
      `${s.prefillRatio.toFixed(1)}× fewer prefilled tokens (${pct(s.prefillSaved)} saved), ` +
      `input cost ${pct(s.inputCostSaved)} lower (total cost ${pct(s.costSaved)}), modeled TTFT p95 ${s.ttftP95Ratio.toFixed(1)}× faster.`,
    '',
    SIMULATOR_NOTE,
  ].join('\n');
}
