// `ctxgate bench replay`: replays recorded agent sessions through a fresh fleet of reference
// workers behind a ctxgate instance, once per configuration, and prints them side by side.
import { readSessions } from '../formats/read-sessions.ts';
import { applyProfile, PROFILE_NAMES, profileHelp } from '../profiles/index.ts';
import { bool, num, parseArgs, rejectUnknown, str } from './args.ts';
import { chatTemplateFor } from './chat-template.ts';
import { runComparison } from './compare.ts';
import { parseConfigSpec, type RunConfig } from './config-spec.ts';
import { loadPricing } from './pricing.ts';
import { createProgress } from './progress.ts';
import { DEFAULT_CONCURRENCY } from './runner.ts';
import { formatTable } from './table.ts';
import type { FleetFactory, FleetSpec, RunSummary } from './types.ts';
import { DEFAULT_BLOCK_SIZE } from '../../kvplanner/block-hash.ts';

export const DEFAULT_WORKERS = 4;
export const DEFAULT_KV_TOKENS = 262_144;
export const DEFAULT_TOKENIZER = 'qwen3';
export const DEFAULT_SEED = 1;
export const DEFAULT_PROFILE = 'append-only';
export const DEFAULT_SERVED_MODEL = 'replay-model';

export const help = `ctxgate bench replay [options] PATH...

Replays recorded agent sessions (each file is one session; calls in order, sessions
concurrently) through N reference workers behind a ctxgate instance, and reports hit rate,
prefilled tokens, TTFT and cost per configuration. PATH: files or folders of
  *.jsonl / *.jsonl.gz      request-stream (one chat body per line, optional _meta)
  *.traj.json               mini-swe-agent trajectories (bash_tool.json next to them)
  *.traj                    SWE-agent trajectories
  *.llm.history             aider .aider.llm.history

Configurations
  --compare SPEC...         several runs over identical traffic, fresh fleet (cold caches) each,
                            e.g. --compare "layout=passthrough,policy=round_robin" "layout=ctxgate,policy=ctxgate"
                            keys: layout, policy, budget, workers, flavor, kv_tokens, block_size, name,
                            and policy.NAME=VALUE for the policy's options (numbers and true/false parsed),
                            e.g. "layout=ctxgate,policy=ctxgate,policy.sticky_slack=0"
  --layout passthrough|ctxgate   single run (default ctxgate); passthrough = body reaches the worker unchanged
  --policy NAME             routing policy (round_robin, least_load, session_hash, sglang_cache_aware,
                            prefix_hash, ctxgate; default ctxgate)
  --budget TOKENS           M*, the middleware's working-set budget

Fleet
  --workers N               reference workers (default ${DEFAULT_WORKERS})
  --flavor vllm|sglang      cache model: vLLM hashed blocks or SGLang radix tree (default vllm)
  --kv-tokens N             KV capacity per worker in tokens (default ${DEFAULT_KV_TOKENS})
  --block-size N            KV block size (default ${DEFAULT_BLOCK_SIZE})
  --tokenizer NAME          qwen3 | llama3_1 | deepseek_v3 | o200k_base | cl100k_base (default ${DEFAULT_TOKENIZER})
  --chat-template FILE      jinja chat template for workers and gateway alike (none = the tokenizer's
                            own). Default: the tokenizer's own, except deepseek_v3, which gets
                            configs/templates/deepseek-v3-tools.jinja (renders the tools list and tool
                            calls as DeepSeek does; the bundled template drops the tools)
  --time-scale X            0 (default): no sleeping, TTFT modeled by the worker (x-sim-timing);
                            > 0: workers sleep, TTFT measured

Traffic
  --profile NAME            agent behaviour applied to append-only recordings (default ${DEFAULT_PROFILE}):
${profileHelp('                              ')}
  --last-n N                last-n-elision window (default 5)
  --condense-max N          condense trigger in messages (default 60)
  --seed N                  seed for profiles and workers (default ${DEFAULT_SEED})
  --concurrency N           sessions replayed at once (default ${DEFAULT_CONCURRENCY})
  --think-ms MS             pause between calls of a session (default 0)
  --max-sessions N          use the first N sessions only
  --max-calls N             replay the first N calls of each session only
  --session-header          send x-session-id (agents usually do not; default off)

Output
  --pricing FILE            JSON/YAML {input_per_mtok, cached_input_per_mtok, output_per_mtok}
                            (default 1 / 0.10 / 4 USD per million tokens)
  --json                    one JSON object per configuration; with --compare {"runs":[…]} in order.
                            Keys: config, requests, sessions, prompt_tokens, cached_tokens, hit_rate,
                            prefill_tokens (prompt − cached), completion_tokens, cost_usd,
                            input_cost_usd (prompt side only: uncached + cached input),
                            ttft_ms {p50,p95,p99}, ttft_source, imbalance (max ÷ mean requests per
                            worker), per_worker[], per_session[] {session, requests, hit_rate,
                            recorded_hit_rate when the recording kept usage}, errors, error_samples, wall_ms,
                            lossless {missing, altered, first_call_changed, checked, samples}: the
                            lossless checker over every call (agent lines that did not reach the
                            worker verbatim, altered copies, sessions whose first call changed),
                            policy_stats (the gateway's GET /v1/gateway/workers models[].policy_stats
                            at the end of the run: ctxgate's branch counts, index size, feedback);
                            config.policy_options when a spec set policy.NAME keys

Figures come from the reference worker (a simulator with a real prefix cache and a latency
model), not from a GPU.`;

const BOOLEANS = new Set(['json', 'session-header']);
const MULTI = new Set(['compare']);
const KNOWN = new Set([
  ...BOOLEANS,
  ...MULTI,
  'layout',
  'policy',
  'budget',
  'workers',
  'flavor',
  'kv-tokens',
  'block-size',
  'tokenizer',
  'time-scale',
  'profile',
  'last-n',
  'condense-max',
  'seed',
  'concurrency',
  'think-ms',
  'max-sessions',
  'max-calls',
  'pricing',
  'model',
  'chat-template',
]);

export interface ReplayDeps {
  startFleet?: FleetFactory;
  out?: (s: string) => void;
  err?: (s: string) => void;
}

export async function replayCommand(argv: string[], deps: ReplayDeps = {}): Promise<number> {
  const out = deps.out ?? ((s: string) => process.stdout.write(s));
  const err = deps.err ?? ((s: string) => process.stderr.write(s));
  if (argv.includes('--help') || argv.includes('-h')) {
    out(help + '\n');
    return 0;
  }
  let args;
  try {
    args = parseArgs(argv, BOOLEANS, MULTI);
    rejectUnknown(args, KNOWN);
  } catch (e) {
    err(`bench replay: ${(e as Error).message}\n`);
    return 2;
  }
  if (!args.positional.length) {
    err('bench replay: give at least one trajectory file or folder (see --help)\n');
    return 2;
  }
  const json = bool(args, 'json');
  let configs: RunConfig[];
  let runs: RunSummary[];
  try {
    const flavor = str(args, 'flavor') ?? 'vllm';
    if (flavor !== 'vllm' && flavor !== 'sglang') throw new Error(`--flavor must be vllm or sglang`);
    const layout = str(args, 'layout') ?? 'ctxgate';
    if (layout !== 'ctxgate' && layout !== 'passthrough') throw new Error(`--layout must be passthrough or ctxgate`);
    const tokenizer = str(args, 'tokenizer') ?? DEFAULT_TOKENIZER;
    const chatTemplate = chatTemplateFor(tokenizer, str(args, 'chat-template'));
    const base: FleetSpec = {
      workers: num(args, 'workers', DEFAULT_WORKERS, 1),
      flavor,
      kvTokens: num(args, 'kv-tokens', DEFAULT_KV_TOKENS, 1),
      blockSize: num(args, 'block-size', DEFAULT_BLOCK_SIZE, 1),
      tokenizer,
      chatTemplate,
      timeScale: num(args, 'time-scale', 0, 0),
      seed: num(args, 'seed', DEFAULT_SEED),
      layout,
      policy: str(args, 'policy') ?? 'ctxgate',
      budget: str(args, 'budget') ? num(args, 'budget', 0, 1) : undefined,
      model: str(args, 'model') ?? DEFAULT_SERVED_MODEL,
    };
    const specs = args.flags.get('compare');
    configs = specs?.length ? specs.map((s) => parseConfigSpec(s, base)) : [parseConfigSpec('', base)];
    const profile = str(args, 'profile') ?? DEFAULT_PROFILE;
    if (!PROFILE_NAMES.includes(profile))
      throw new Error(`unknown --profile '${profile}' (${PROFILE_NAMES.join(', ')})`);
    let sessions = await readSessions(args.positional);
    const maxSessions = num(args, 'max-sessions', 0);
    if (maxSessions > 0) sessions = sessions.slice(0, maxSessions);
    const maxCalls = num(args, 'max-calls', 0);
    if (maxCalls > 0) sessions = sessions.map((s) => ({ ...s, calls: s.calls.slice(0, maxCalls) }));
    if (!sessions.length) throw new Error('no sessions found in the given paths');
    sessions = applyProfile(sessions, profile, {
      seed: base.seed,
      lastN: str(args, 'last-n') ? num(args, 'last-n', 5, 0) : undefined,
      condenseMaxMessages: str(args, 'condense-max') ? num(args, 'condense-max', 60, 4) : undefined,
    });
    const pricing = await loadPricing(str(args, 'pricing'));
    const startFleet = deps.startFleet ?? (await import('./fleet.ts')).startFleet;
    const progress = createProgress(!json);
    const total = sessions.reduce((a, s) => a + s.calls.length, 0);
    try {
      runs = await runComparison(sessions, configs, {
        concurrency: num(args, 'concurrency', DEFAULT_CONCURRENCY, 1),
        thinkMs: num(args, 'think-ms', 0),
        sessionHeader: bool(args, 'session-header') ? 'true' : undefined,
        pricing,
        profile,
        startFleet,
        onRunStart: (c) => progress.start(total, c.label),
        onCall: () => progress.tick(),
      });
    } finally {
      progress.stop();
    }
  } catch (e) {
    err(`bench replay: ${(e as Error).message}\n`);
    return 1;
  }
  if (json) out(JSON.stringify(configs.length > 1 ? { runs } : runs[0], null, 2) + '\n');
  else out(formatTable(runs) + '\n');
  return runs.some((r) => r.requests === 0) ? 1 : 0;
}

export function run(argv: string[]): Promise<number> {
  return replayCommand(argv);
}
