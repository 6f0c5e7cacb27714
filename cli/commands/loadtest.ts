// ctxgate loadtest: multi-turn agent sessions through autocannon against any OpenAI- or
// Anthropic-compatible endpoint (ctxgate, a vLLM or SGLang server, or any other gateway), with
// throughput, latency, TTFT, errors and cache hit rate from the answers' usage. --compare plays the
// same traffic against a second target in the same run. Keys come from an environment variable.
import { writeFileSync } from 'node:fs';
import cliProgress from 'cli-progress';
import { readSessions } from '../../loadtest/formats/read-sessions.ts';
import type { Session } from '../../loadtest/formats/types.ts';
import { bool, num, parseArgs, rejectUnknown, str, type ParsedArgs } from '../../loadtest/replay/args.ts';
import { generateSessions } from '../../loadtest/synth/index.ts';
import { runLoad, type CallSample, type LoadOptions } from '../../loadtest/load/driver.ts';
import { API_NAMES, type ApiName } from '../../loadtest/load/protocols.ts';
import { renderLoadReport } from '../../loadtest/load/report-html.ts';
import { compareRuns, renderText, summariseLoad, type LoadSummary } from '../../loadtest/load/summary.ts';

export const DEFAULT_CONNECTIONS = 8;
export const DEFAULT_DURATION_S = 30;
export const DEFAULT_MAX_TOKENS = 256;
export const DEFAULT_TIMEOUT_S = 120;
export const DEFAULT_KEY_ENV = 'CTXGATE_KEY';
const MIN_SYNTH_SESSIONS = 12;

export const help = `ctxgate loadtest --target URL [options]

Drives multi-turn agent sessions through autocannon against a live endpoint: each connection plays
sessions one after another, every next request extending the last with the answer it received.
Reports requests/s, errors by status, latency and TTFT p50/p90/p99, output tokens/s, and the
prefix-cache hit rate from the answers' usage (cached_tokens / cache_read_input_tokens).

  --target URL         base URL of ctxgate, a vLLM/SGLang server or any OpenAI-compatible endpoint
  --api NAME           chat (default) | anthropic | responses
  --model NAME         model to ask for (default: the first one GET /v1/models lists)
  --key-env NAME       environment variable holding the API key (default ${DEFAULT_KEY_ENV}; unset = no key)
  --traffic PATH...    recorded trajectories or captured request streams (any format bench replay reads)
  --synthetic          ctxgate's synthetic agent sessions (default when no --traffic)
  --sessions N         synthetic sessions to generate (default max(2 × connections, ${MIN_SYNTH_SESSIONS}))
  --seed N             synthetic traffic seed (default 42)
  --connections C      concurrent agents (default ${DEFAULT_CONNECTIONS})
  --duration S         seconds to run (default ${DEFAULT_DURATION_S})
  --requests N         stop after N requests instead of a duration
  --rate R             cap on requests per second over all connections (default: none)
  --think-ms MS        pause between an answer and the agent's next request (default 0)
  --stream             stream answers (TTFT measured client side)
  --max-tokens N       answer cap per request (default ${DEFAULT_MAX_TOKENS})
  --timeout S          per-request timeout (default ${DEFAULT_TIMEOUT_S})
  --compare URL2       play the same traffic against a second target and print ratios
  --json               print {"runs":[…],"ratios":{…}} instead of text
  --out FILE.html      write a self-contained HTML report

Ctrl-C stops the run and prints partial results.`;

const KNOWN = new Set([
  'target',
  'api',
  'model',
  'key-env',
  'traffic',
  'synthetic',
  'sessions',
  'seed',
  'connections',
  'duration',
  'requests',
  'rate',
  'think-ms',
  'stream',
  'max-tokens',
  'timeout',
  'compare',
  'json',
  'out',
  'help',
]);

async function defaultModel(target: string, key: string | undefined): Promise<string> {
  const res = await fetch(`${target.replace(/\/$/, '')}/v1/models`, {
    headers: key ? { authorization: `Bearer ${key}`, 'x-api-key': key } : {},
  });
  if (!res.ok) throw new Error(`GET ${target}/v1/models answered HTTP ${res.status}: pass --model`);
  const body = (await res.json()) as { data?: { id?: string }[] };
  const id = body.data?.[0]?.id;
  if (!id) throw new Error(`GET ${target}/v1/models lists no model: pass --model`);
  return id;
}

async function loadTraffic(a: ParsedArgs, connections: number): Promise<{ sessions: Session[]; label: string }> {
  const paths = a.flags.get('traffic') ?? [];
  if (paths.length && bool(a, 'synthetic')) throw new Error('--traffic and --synthetic exclude each other');
  if (paths.length) {
    const sessions = await readSessions(paths);
    if (!sessions.length) throw new Error(`no sessions found in ${paths.join(', ')}`);
    return { sessions, label: `${sessions.length} recorded sessions` };
  }
  const count = num(a, 'sessions', Math.max(2 * connections, MIN_SYNTH_SESSIONS), 1);
  const sessions = generateSessions({ count, seed: num(a, 'seed', 42) });
  return { sessions, label: `${count} synthetic agent sessions` };
}

function progressFor(
  enabled: boolean,
  label: string,
  total: number,
  byRequests: boolean,
): { onSample: (s: CallSample) => void; stop(): void } {
  if (!enabled || !process.stderr.isTTY) return { onSample: () => {}, stop: () => {} };
  const bar = new cliProgress.SingleBar(
    {
      stream: process.stderr,
      format: ` ${label} |{bar}| {value}/{total} ${byRequests ? 'requests' : 's'} | {reqs} req, {errs} errors`,
      hideCursor: true,
    },
    cliProgress.Presets.shades_classic,
  );
  let reqs = 0;
  let errs = 0;
  const t0 = Date.now();
  bar.start(total, 0, { reqs, errs });
  const timer = byRequests
    ? undefined
    : setInterval(() => bar.update(Math.min(total, Math.round((Date.now() - t0) / 1000)), { reqs, errs }), 250);
  return {
    onSample: (s) => {
      reqs++;
      if (!s.ok) errs++;
      if (byRequests) bar.update(reqs, { reqs, errs });
    },
    stop: () => {
      if (timer) clearInterval(timer);
      bar.stop();
    },
  };
}

export async function run(argv: string[]): Promise<number> {
  let a: ParsedArgs;
  try {
    a = parseArgs(argv, new Set(['synthetic', 'stream', 'json', 'help']), new Set(['traffic']));
    rejectUnknown(a, KNOWN);
  } catch (err) {
    process.stderr.write(`ctxgate loadtest: ${(err as Error).message}\n`);
    return 2;
  }
  try {
    const target = str(a, 'target');
    if (!target) throw new Error('--target URL is required');
    const targets = [target, ...(str(a, 'compare') ? [str(a, 'compare')!] : [])];
    for (const t of targets) if (!/^https?:\/\//.test(t)) throw new Error(`not an http(s) URL: ${t}`);
    const api = (str(a, 'api') ?? 'chat') as ApiName;
    if (!API_NAMES.includes(api)) throw new Error(`--api must be one of ${API_NAMES.join(', ')}`);
    const keyEnv = str(a, 'key-env') ?? DEFAULT_KEY_ENV;
    const key = process.env[keyEnv] || undefined;
    const connections = num(a, 'connections', DEFAULT_CONNECTIONS, 1);
    const requests = str(a, 'requests') ? num(a, 'requests', 0, 1) : undefined;
    const json = bool(a, 'json');
    const { sessions, label } = await loadTraffic(a, connections);
    const callsPerSession = new Map(sessions.map((s) => [s.id, s.calls.length]));
    const runs: LoadSummary[] = [];
    const stop = new AbortController();
    const onSigint = () => stop.abort();
    process.once('SIGINT', onSigint);
    try {
      for (const t of targets) {
        if (stop.signal.aborted) break;
        const model = str(a, 'model') ?? (await defaultModel(t, key));
        const durationS = num(a, 'duration', DEFAULT_DURATION_S, 1);
        const progress = progressFor(!json, t, requests ?? durationS, requests !== undefined);
        const o: LoadOptions = {
          target: t,
          api,
          model,
          key,
          sessions,
          connections,
          durationS,
          requests,
          rate: num(a, 'rate', 0),
          thinkMs: num(a, 'think-ms', 0),
          stream: bool(a, 'stream'),
          maxTokens: num(a, 'max-tokens', DEFAULT_MAX_TOKENS, 1),
          timeoutS: num(a, 'timeout', DEFAULT_TIMEOUT_S, 1),
          onSample: progress.onSample,
        };
        try {
          const result = await runLoad(o, stop.signal);
          runs.push(summariseLoad(result, { target: t, api, stream: o.stream, callsPerSession }));
        } finally {
          progress.stop();
        }
      }
    } finally {
      process.removeListener('SIGINT', onSigint);
    }
    const ratios = runs.length > 1 ? compareRuns(runs[0], runs[1]) : undefined;
    if (json) process.stdout.write(`${JSON.stringify({ runs, ...(ratios ? { ratios } : {}) }, null, 2)}\n`);
    else process.stdout.write(`${renderText(runs, ratios)}\n`);
    const out = str(a, 'out');
    if (out) {
      writeFileSync(out, renderLoadReport(runs, { connections, traffic: label }));
      if (!json) process.stdout.write(`report written to ${out}\n`);
    }
    return runs.every((r) => r.requests > 0) ? 0 : 1;
  } catch (err) {
    process.stderr.write(`ctxgate loadtest: ${(err as Error).message}\n`);
    return 2;
  }
}
