// `ctxgate bench calibrate`: replays recorded agent runs call by call into one in-process
// reference worker over HTTP and compares the worker's cached tokens with what the provider
// reported. Sessions run one after another through the same cache, as they ran. Each call
// carries its recorded answer (the `sim_output` extension) so the worker caches the tokens the
// provider's model really generated — the next call's history repeats them.
// Defaults fit the bundled DeepSeek recordings: deepseek_v3 tokenizer, 64-token cache units,
// configs/templates/deepseek-v3-tools.jinja. Input parsing: loadtest/formats/ (shared readers).
import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readSessions } from './formats/read-sessions.ts';
import { recordedAnswer } from './formats/recorded-answer.ts';
import { startSimWorker } from './sim-worker/index.ts';
import { parseWorkerArgs, OPTIONS_HELP, type SimWorkerOptions } from './sim-worker/options.ts';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const DEFAULT_TEMPLATE = resolve(repoRoot, 'configs/templates/deepseek-v3-tools.jinja');
/** DeepSeek's context cache works in 64-token units. */
export const DEEPSEEK_CACHE_UNIT = 64;
/** Large enough that nothing is evicted: the provider's disk cache outlives these runs. */
export const CALIBRATION_KV_TOKENS = 50_000_000;
const CALIBRATION_MODEL = 'calibration';

export function trajectoriesRoot(): string {
  return process.env.CTXGATE_TRAJECTORIES ?? resolve(repoRoot, '../shared/trajectories');
}

export interface SessionResult {
  session: string;
  requests: number;
  recorded_prompt_tokens: number;
  recorded_cached_tokens: number;
  simulated_prompt_tokens: number;
  simulated_cached_tokens: number;
  recorded_hit_rate: number;
  simulated_hit_rate: number;
  abs_diff_points: number;
  prompt_token_ratio: number;
}

export interface CalibrationResult {
  requests: number;
  recorded_hit_rate: number;
  simulated_hit_rate: number;
  abs_diff_points: number;
  prompt_token_ratio: number;
  per_session: SessionResult[];
  worker: { tokenizer: string; flavor: string; block_size: number; chat_template: string | null };
}

export interface CalibrationOptions {
  trajectories: string[];
  worker?: Partial<SimWorkerOptions>;
  /** Called after each session (progress output). */
  onSession?: (r: SessionResult) => void;
}

const rate = (c: number, p: number): number => (p > 0 ? c / p : 0);
const points = (a: number, b: number): number => Math.abs(a - b) * 100;

function summarise(session: string, requests: number, rp: number, rc: number, sp: number, sc: number): SessionResult {
  const recorded = rate(rc, rp);
  const simulated = rate(sc, sp);
  return {
    session,
    requests,
    recorded_prompt_tokens: rp,
    recorded_cached_tokens: rc,
    simulated_prompt_tokens: sp,
    simulated_cached_tokens: sc,
    recorded_hit_rate: recorded,
    simulated_hit_rate: simulated,
    abs_diff_points: points(recorded, simulated),
    prompt_token_ratio: rate(sp, rp),
  };
}

export async function runCalibration(opts: CalibrationOptions): Promise<CalibrationResult> {
  const sessions = await readSessions(opts.trajectories);
  if (!sessions.length) throw new Error(`no recorded sessions under ${opts.trajectories.join(', ')}`);
  const workerOpts: Partial<SimWorkerOptions> = {
    tokenizer: 'deepseek_v3',
    blockSize: DEEPSEEK_CACHE_UNIT,
    chatTemplate: DEFAULT_TEMPLATE,
    kvTokens: CALIBRATION_KV_TOKENS,
    maxModelLen: 10_000_000,
    ...opts.worker,
    model: CALIBRATION_MODEL,
    timeScale: 0,
  };
  // `--chat-template bundled` = the template shipped inside the tokenizer package.
  if (workerOpts.chatTemplate === 'bundled') workerOpts.chatTemplate = undefined;
  const worker = await startSimWorker(workerOpts);
  const per: SessionResult[] = [];
  const tot = { n: 0, rp: 0, rc: 0, sp: 0, sc: 0 };
  try {
    for (const s of sessions) {
      const acc = { n: 0, rp: 0, rc: 0, sp: 0, sc: 0 };
      for (let k = 0; k < s.calls.length; k++) {
        const call = s.calls[k];
        if (!call.recordedUsage) continue;
        const body: Record<string, unknown> = { ...call.body, model: CALIBRATION_MODEL, stream: false };
        const answer = recordedAnswer(s, k);
        if (answer) body.sim_output = answer;
        const res = await fetch(`${worker.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
        const json = (await res.json()) as {
          usage?: { prompt_tokens: number; prompt_tokens_details?: { cached_tokens?: number } };
          message?: string;
        };
        if (!res.ok || !json.usage)
          throw new Error(`${s.id} call ${k}: worker answered ${res.status}: ${json.message ?? ''}`);
        acc.n++;
        acc.rp += call.recordedUsage.prompt_tokens;
        acc.rc += call.recordedUsage.cached_tokens;
        acc.sp += json.usage.prompt_tokens;
        acc.sc += json.usage.prompt_tokens_details?.cached_tokens ?? 0;
      }
      const r = summarise(s.id, acc.n, acc.rp, acc.rc, acc.sp, acc.sc);
      per.push(r);
      opts.onSession?.(r);
      for (const k of ['n', 'rp', 'rc', 'sp', 'sc'] as const) tot[k] += acc[k];
    }
  } finally {
    await worker.close();
  }
  const all = summarise('overall', tot.n, tot.rp, tot.rc, tot.sp, tot.sc);
  const o = worker.options;
  return {
    requests: tot.n,
    recorded_hit_rate: all.recorded_hit_rate,
    simulated_hit_rate: all.simulated_hit_rate,
    abs_diff_points: all.abs_diff_points,
    prompt_token_ratio: all.prompt_token_ratio,
    per_session: per,
    worker: {
      tokenizer: o.tokenizer,
      flavor: o.flavor,
      block_size: o.blockSize,
      chat_template: o.chatTemplate ?? null,
    },
  };
}

export const help = `ctxgate bench calibrate [--trajectories PATH...] [--json] [worker options]
Replays recorded agent runs (request-stream *.jsonl[.gz], mini-swe-agent *.traj.json) into one
in-process reference worker and compares its cached tokens with the provider's recorded usage.
Prints per run and overall: recorded vs simulated hit rate, the difference in points, and
simulated ÷ recorded prompt tokens. Defaults: --tokenizer deepseek_v3 --block-size 64
--chat-template configs/templates/deepseek-v3-tools.jinja ('bundled' = the tokenizer's own), trajectories from
$CTXGATE_TRAJECTORIES or ../shared/trajectories/mini-swe-agent-deepseek.
Worker options:
${OPTIONS_HELP}`;

const pct = (x: number): string => (x * 100).toFixed(2).padStart(6) + '%';

export async function run(argv: string[]): Promise<number> {
  const paths: string[] = [];
  let json = false;
  const workerArgs: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--json') json = true;
    else if (argv[i] === '--trajectories') {
      while (argv[i + 1] !== undefined && !argv[i + 1].startsWith('--')) paths.push(argv[++i]);
    } else workerArgs.push(argv[i]);
  }
  let parsed;
  try {
    parsed = parseWorkerArgs(workerArgs);
    if (parsed.rest.length) throw new Error(`unknown option ${parsed.rest[0]}`);
  } catch (err) {
    process.stderr.write(`bench calibrate: ${(err as Error).message}\n`);
    return 2;
  }
  if (!paths.length) paths.push(resolve(trajectoriesRoot(), 'mini-swe-agent-deepseek'));
  for (const p of paths)
    if (!existsSync(p)) {
      process.stderr.write(`bench calibrate: ${p} does not exist\n`);
      return 2;
    }
  if (!json)
    process.stdout.write(
      `${'session'.padEnd(60)} ${'calls'.padStart(5)} ${'recorded'.padStart(8)} ${'simulated'.padStart(9)} ${'diff pts'.padStart(8)} ${'prompt ratio'.padStart(12)}\n`,
    );
  const line = (r: SessionResult): void => {
    if (json) return;
    process.stdout.write(
      `${r.session.slice(0, 60).padEnd(60)} ${String(r.requests).padStart(5)} ${pct(r.recorded_hit_rate).padStart(8)} ${pct(r.simulated_hit_rate).padStart(9)} ${r.abs_diff_points.toFixed(2).padStart(8)} ${r.prompt_token_ratio.toFixed(3).padStart(12)}\n`,
    );
  };
  const result = await runCalibration({ trajectories: paths, worker: parsed.opts, onSession: line });
  if (json) process.stdout.write(JSON.stringify(result, null, 2) + '\n');
  else {
    line({
      ...summarise('overall', result.requests, 0, 0, 0, 0),
      recorded_hit_rate: result.recorded_hit_rate,
      simulated_hit_rate: result.simulated_hit_rate,
      abs_diff_points: result.abs_diff_points,
      prompt_token_ratio: result.prompt_token_ratio,
    });
  }
  return 0;
}
