// One load run's figures, as `ctxgate loadtest` prints and writes them (the `--json` shape the
// README documents): totals, errors by status, client-side latency and TTFT percentiles (nearest
// rank), output tokens per second, hit rate from the answers' usage, per-session summaries, and
// ctxgate's predicted cached tokens when the target sent them. Comparison ratios for --compare.
import { percentile } from '../replay/metrics.ts';
import type { CallSample, LoadRun } from './driver.ts';

export interface P3 {
  p50: number;
  p90: number;
  p99: number;
}

export interface SessionRow {
  session: string;
  requests: number;
  errors: number;
  prompt_tokens: number;
  cached_tokens: number;
  hit_rate: number;
}

export interface LoadSummary {
  target: string;
  api: string;
  stream: boolean;
  duration_s: number;
  requests: number;
  ok: number;
  rps: number;
  errors: Record<string, number>;
  error_samples: string[];
  latency_ms: P3;
  /** Client-side time to the first body byte of a stream; null for non-streamed runs. */
  ttft_ms: P3 | null;
  output_tok_s: number;
  prompt_tokens: number;
  cached_tokens: number;
  hit_rate: number;
  /** Sum of x-ctxgate-prefix `cached=` over answered requests; null when the target is not ctxgate. */
  predicted_cached_tokens: number | null;
  sessions_started: number;
  sessions_completed: number;
  stopped_early: boolean;
  sessions: SessionRow[];
}

const round = (x: number, d = 2) => Math.round(x * 10 ** d) / 10 ** d;
const ratio = (a: number, b: number) => (b > 0 ? round(a / b, 4) : 0);

export function p3(values: number[]): P3 {
  const s = values.slice().sort((a, b) => a - b);
  return { p50: round(percentile(s, 0.5)), p90: round(percentile(s, 0.9)), p99: round(percentile(s, 0.99)) };
}

function errorKey(s: CallSample): string {
  if (s.kind) return s.kind;
  return s.status >= 200 && s.status < 300 ? 'error_body' : String(s.status);
}

function sessionRows(samples: CallSample[]): SessionRow[] {
  const by = new Map<string, SessionRow>();
  for (const s of samples) {
    const r = by.get(s.session) ?? {
      session: s.session,
      requests: 0,
      errors: 0,
      prompt_tokens: 0,
      cached_tokens: 0,
      hit_rate: 0,
    };
    r.requests++;
    if (!s.ok) r.errors++;
    r.prompt_tokens += s.prompt_tokens;
    r.cached_tokens += s.cached_tokens;
    by.set(s.session, r);
  }
  return [...by.values()].map((r) => ({ ...r, hit_rate: ratio(r.cached_tokens, r.prompt_tokens) }));
}

export function summariseLoad(
  run: LoadRun,
  meta: { target: string; api: string; stream: boolean; callsPerSession: Map<string, number> },
): LoadSummary {
  const ok = run.samples.filter((s) => s.ok);
  const errors: Record<string, number> = {};
  for (const s of run.samples) if (!s.ok) errors[errorKey(s)] = (errors[errorKey(s)] ?? 0) + 1;
  const prompt = ok.reduce((a, s) => a + s.prompt_tokens, 0);
  const cached = ok.reduce((a, s) => a + s.cached_tokens, 0);
  const completion = ok.reduce((a, s) => a + s.completion_tokens, 0);
  const predicted = ok.filter((s) => s.predicted_cached_tokens !== undefined);
  const secs = run.wallMs / 1000;
  const sessions = sessionRows(run.samples);
  const completed = sessions.filter(
    (r) => r.requests >= (meta.callsPerSession.get(r.session.replace(/#\d+$/, '')) ?? Infinity),
  ).length;
  return {
    target: meta.target,
    api: meta.api,
    stream: meta.stream,
    duration_s: round(secs),
    requests: run.samples.length,
    ok: ok.length,
    rps: secs > 0 ? round(run.samples.length / secs) : 0,
    errors,
    error_samples: [...new Set(run.samples.filter((s) => !s.ok).map((s) => s.error ?? `HTTP ${s.status}`))].slice(0, 5),
    latency_ms: p3(run.samples.filter((s) => s.status !== 0).map((s) => s.latency_ms)),
    ttft_ms: meta.stream ? p3(ok.flatMap((s) => (s.ttft_ms === undefined ? [] : [s.ttft_ms]))) : null,
    output_tok_s: secs > 0 ? round(completion / secs, 1) : 0,
    prompt_tokens: prompt,
    cached_tokens: cached,
    hit_rate: ratio(cached, prompt),
    predicted_cached_tokens: predicted.length
      ? predicted.reduce((a, s) => a + (s.predicted_cached_tokens ?? 0), 0)
      : null,
    sessions_started: run.sessionsStarted,
    sessions_completed: completed,
    stopped_early: run.stoppedEarly,
    sessions,
  };
}

/** Second run ÷ first for the figures a comparison is read by. */
export function compareRuns(a: LoadSummary, b: LoadSummary): Record<string, number> {
  return {
    rps: ratio(b.rps, a.rps),
    latency_p50: ratio(b.latency_ms.p50, a.latency_ms.p50),
    latency_p99: ratio(b.latency_ms.p99, a.latency_ms.p99),
    ...(a.ttft_ms && b.ttft_ms
      ? { ttft_p50: ratio(b.ttft_ms.p50, a.ttft_ms.p50), ttft_p90: ratio(b.ttft_ms.p90, a.ttft_ms.p90) }
      : {}),
    hit_rate: ratio(b.hit_rate, a.hit_rate),
    prefill_tokens: ratio(b.prompt_tokens - b.cached_tokens, a.prompt_tokens - a.cached_tokens),
  };
}

const fmt = (n: number) => n.toLocaleString('en-US', { maximumFractionDigits: 2 });

export function renderText(runs: LoadSummary[], ratios?: Record<string, number>): string {
  const lines: string[] = [];
  for (const r of runs) {
    const errs =
      Object.entries(r.errors)
        .map(([k, v]) => `${k}: ${v}`)
        .join(', ') || 'none';
    lines.push(
      `target ${r.target} (${r.api}${r.stream ? ', stream' : ''})${r.stopped_early ? ' — stopped early, partial results' : ''}`,
      `  requests ${fmt(r.requests)} in ${r.duration_s} s = ${fmt(r.rps)} req/s; ok ${fmt(r.ok)}; errors ${errs}`,
      `  latency ms p50 ${r.latency_ms.p50} / p90 ${r.latency_ms.p90} / p99 ${r.latency_ms.p99}`,
      r.ttft_ms
        ? `  TTFT ms (client, first byte) p50 ${r.ttft_ms.p50} / p90 ${r.ttft_ms.p90} / p99 ${r.ttft_ms.p99}`
        : '  TTFT: not measured (use --stream)',
      `  output ${fmt(r.output_tok_s)} tok/s; prompt ${fmt(r.prompt_tokens)} tokens, cached ${fmt(r.cached_tokens)}: hit rate ${(r.hit_rate * 100).toFixed(1)} %`,
      r.predicted_cached_tokens !== null
        ? `  ctxgate predicted cached ${fmt(r.predicted_cached_tokens)} tokens`
        : '  (no x-ctxgate-prefix headers: target is not ctxgate)',
      `  sessions started ${r.sessions_started}, completed ${r.sessions_completed}`,
    );
    if (r.error_samples.length) lines.push(`  error samples: ${r.error_samples.join(' | ')}`);
  }
  if (ratios)
    lines.push(
      `second ÷ first: ${Object.entries(ratios)
        .map(([k, v]) => `${k} ×${v}`)
        .join(', ')}`,
    );
  return lines.join('\n');
}
