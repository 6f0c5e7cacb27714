// Turns the call records of one run into the documented summary: totals, hit rate, prefill,
// cost, TTFT percentiles (nearest rank), imbalance (max ÷ mean requests per worker).
import type { Session } from '../formats/types.ts';
import { costUsd, inputCostUsd } from './pricing.ts';
import type {
  CallRecord,
  LosslessTotals,
  Percentiles,
  Pricing,
  RunSummary,
  SessionSummary,
  WorkerReport,
} from './types.ts';

export function percentile(sorted: number[], q: number): number {
  if (!sorted.length) return 0;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[rank];
}

export function percentiles(values: number[]): Percentiles {
  const s = values.slice().sort((a, b) => a - b);
  const r = (x: number) => Math.round(x * 100) / 100;
  return { p50: r(percentile(s, 0.5)), p95: r(percentile(s, 0.95)), p99: r(percentile(s, 0.99)) };
}

export function imbalance(perWorker: WorkerReport[]): number {
  if (!perWorker.length) return 0;
  const counts = perWorker.map((w) => w.requests);
  const mean = counts.reduce((a, b) => a + b, 0) / counts.length;
  return mean > 0 ? Math.round((Math.max(...counts) / mean) * 1000) / 1000 : 0;
}

const ratio = (a: number, b: number) => (b > 0 ? Math.round((a / b) * 10_000) / 10_000 : 0);

function sessionSummaries(sessions: Session[], records: CallRecord[]): SessionSummary[] {
  const by = new Map<string, CallRecord[]>();
  for (const r of records) (by.get(r.session) ?? by.set(r.session, []).get(r.session)!).push(r);
  return sessions.map((s) => {
    const rs = (by.get(s.id) ?? []).filter((r) => r.ok);
    const p = rs.reduce((a, r) => a + r.prompt_tokens, 0);
    const c = rs.reduce((a, r) => a + r.cached_tokens, 0);
    const out: SessionSummary = { session: s.id, requests: rs.length, hit_rate: ratio(c, p) };
    const rec = s.calls.filter((x) => x.recordedUsage);
    if (rec.length) {
      const rp = rec.reduce((a, x) => a + x.recordedUsage!.prompt_tokens, 0);
      const rc = rec.reduce((a, x) => a + x.recordedUsage!.cached_tokens, 0);
      out.recorded_hit_rate = ratio(rc, rp);
    }
    return out;
  });
}

/** Workers the gateway named in responses, when the fleet cannot report its own counters. */
function perWorkerFromRecords(records: CallRecord[]): WorkerReport[] {
  const m = new Map<string, WorkerReport>();
  for (const r of records) {
    if (!r.ok || !r.worker) continue;
    const w = m.get(r.worker) ?? { worker: r.worker, requests: 0, prompt_tokens: 0, cached_tokens: 0 };
    w.requests++;
    w.prompt_tokens += r.prompt_tokens;
    w.cached_tokens += r.cached_tokens;
    m.set(r.worker, w);
  }
  return [...m.values()].sort((a, b) => a.worker.localeCompare(b.worker));
}

export function summarise(
  config: RunSummary['config'],
  sessions: Session[],
  records: CallRecord[],
  fleetWorkers: WorkerReport[],
  pricing: Pricing,
  ttftSource: RunSummary['ttft_source'],
  wallMs: number,
): RunSummary {
  const ok = records.filter((r) => r.ok);
  const prompt = ok.reduce((a, r) => a + r.prompt_tokens, 0);
  const cached = ok.reduce((a, r) => a + r.cached_tokens, 0);
  const completion = ok.reduce((a, r) => a + r.completion_tokens, 0);
  const perWorker = fleetWorkers.some((w) => w.requests > 0) ? fleetWorkers : perWorkerFromRecords(records);
  const errs = records.filter((r) => !r.ok);
  return {
    config,
    requests: ok.length,
    sessions: sessions.length,
    prompt_tokens: prompt,
    cached_tokens: cached,
    hit_rate: ratio(cached, prompt),
    prefill_tokens: prompt - cached,
    completion_tokens: completion,
    cost_usd: Math.round(costUsd(pricing, prompt, cached, completion) * 1e6) / 1e6,
    input_cost_usd: Math.round(inputCostUsd(pricing, prompt, cached) * 1e6) / 1e6,
    ttft_ms: percentiles(ok.flatMap((r) => (r.ttft_ms === undefined ? [] : [r.ttft_ms]))),
    ttft_source: ttftSource,
    imbalance: imbalance(perWorker),
    per_worker: perWorker,
    per_session: sessionSummaries(sessions, records),
    errors: errs.length,
    error_samples: [...new Set(errs.map((r) => r.error ?? `HTTP ${r.status}`))].slice(0, 5),
    wall_ms: Math.round(wallMs),
    ...losslessTotals(records),
  };
}

/** Sum of the calls' lossless checks; absent when no call was checked. */
function losslessTotals(records: CallRecord[]): { lossless?: LosslessTotals } {
  const checked = records.filter((r) => r.lossless);
  if (!checked.length) return {};
  const t: LosslessTotals = { missing: 0, altered: 0, first_call_changed: 0, checked: checked.length, samples: [] };
  for (const r of checked) {
    t.missing += r.lossless!.missing;
    t.altered += r.lossless!.altered;
    t.first_call_changed += r.lossless!.first_call_changed;
    for (const x of r.lossless!.samples) if (t.samples.length < 5) t.samples.push(x);
  }
  return { lossless: t };
}
