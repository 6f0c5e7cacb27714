// `ctxgate bench strategies`: the context-strategy comparison (docs/architecture.md, "Measuring a context strategy") as a token-level
// simulation (real tokenizer, prefix-cache model over consecutive calls); no model, no fleet.
import { chainSpecOf } from '../gateway/assemble.ts';
import { parseConfig } from '../gateway/config/load.ts';
import type { ChainSpec } from '../middleware/chain.ts';
import { loadTokenizer } from '../middleware/tokens/registry.ts';
import { readSessions } from './formats/read-sessions.ts';
import type { Session } from './formats/types.ts';
import { applyProfile, PROFILE_NAMES } from './profiles/index.ts';
import { bool, num, parseArgs, rejectUnknown, str, UsageError } from './replay/args.ts';
import { loadPricing } from './replay/pricing.ts';
import { fullLog, observationMasking, slidingWindow, DEFAULT_MASK_KEEP } from './strategies/baselines.ts';
import { DEFAULT_HIGH as TAU_HIGH, DEFAULT_LOW as TAU_LOW } from '../middleware/compaction/compact.ts';
import { ctxgateStrategy, STRATEGY_MODEL } from './strategies/ctxgate-strategy.ts';
import { StrategyEvaluator, type StrategyResult } from './strategies/evaluate.ts';
import { formatStrategyTable } from './strategies/table.ts';
import { TokenModel } from './strategies/token-model.ts';
import { generateSessions } from './synth/index.ts';
import { DEFAULT_BLOCK_SIZE } from '../kvplanner/block-hash.ts';

export const DEFAULT_BUDGET = 16_384;
export const DEFAULT_SYNTH_SESSIONS = 12;
export const DEFAULT_TOKENIZER = 'qwen3';

export const help = `ctxgate bench strategies [options] [PATH...]

Compares context strategies over the same sessions under one token budget, as a token-level
simulation: no model and no fleet. Each call's staged prompt is tokenised with the real
tokenizer; a prefix cache serves the longest common token prefix with the previous call of
the session (floored to whole KV blocks). PATH: trajectories as for \`bench replay\`
(*.jsonl[.gz], *.traj.json, *.traj, *.llm.history); default: ctxgate's synthetic sessions.

Strategies
  full-log              every message, every call (what agents send by default)
  sliding-window        system prompt + the newest messages that fit in W tokens (--window, default = budget)
  observation-masking   tool outputs older than the last M (--mask-keep, default ${DEFAULT_MASK_KEEP}) replaced by a placeholder
  ctxgate               the product's chain: stabiliser (agent elisions deferred), tombstones for
                        superseded reads (ledger); at ${TAU_HIGH}·M* batch compaction replaces the history between
                        the task and the latest calls by an audited checkpoint digest, down to ${TAU_LOW}·M*
                        (lossless, extraction, pointers, ranges; one deduplicated list keeps the verbatim set)

Metrics (per strategy, over all calls of all sessions)
  staged tokens / call    tokens sent per call (mean, max); calls over budget = staged > --budget
  compression ratio       raw history tokens ÷ staged tokens (C_r)
  hit rate                cached ÷ staged tokens under the prefix-cache model above; also over the calls
                          that extend the previous call's prompt only ("between compactions")
  prefilled tokens        staged − cached: what the engine computes again
  input cost              prefilled × input price + cached × cached price (outputs are the same for all strategies)
  verbatim retention      share of the raw history's verbatim set so far (file paths, file:line refs, traceback
                          line numbers, error codes, hashes, exception and traceback function names, failing
                          assertion lines; compaction's own extractor) present in the staged prompt, averaged
                          over calls (present: occurs whole, not inside a longer word; verbatim.ts occursIn)
  compactions             calls where the staged history stops being an extension of the previous call's
  constraint retention    share of the task's constraint lines ("do not …", "must …") still present after
                          each compaction, averaged over compactions (n/a when nothing was ever removed)
  stale exposure          calls where a superseded file read (written by a later call, per the observation
                          ledger over the raw history) is in context with no tombstone naming it

Options
  --budget TOKENS       M*, the one budget every strategy works under (default ${DEFAULT_BUDGET})
  --window TOKENS       sliding-window size (default: the budget)
  --mask-keep M         observation-masking window (default ${DEFAULT_MASK_KEEP})
  --tokenizer NAME      qwen3 | llama3_1 | deepseek_v3 | o200k_base | cl100k_base (default ${DEFAULT_TOKENIZER})
  --block-size N        KV block size of the cache model (default ${DEFAULT_BLOCK_SIZE})
  --cache-completions   the cache also holds the previous call's completion (engines keep the blocks
                        they decoded, vLLM and SGLang both); default: previous prompt only
  --sessions N          synthetic sessions when no PATH is given (default ${DEFAULT_SYNTH_SESSIONS})
  --seed N              synthetic seed (default 42)
  --profile NAME        agent behaviour applied to the inputs first (${PROFILE_NAMES.join(', ')})
  --max-sessions N      --max-calls N   truncate the input
  --pricing FILE        {input_per_mtok, cached_input_per_mtok, output_per_mtok} (default 1 / 0.10 / 4)
  --json                {"strategies": [ … ]} with the keys of the table`;

const BOOLEANS = new Set(['json', 'cache-completions']);
const KNOWN = new Set([
  'json',
  'cache-completions',
  'budget',
  'window',
  'mask-keep',
  'tokenizer',
  'block-size',
  'sessions',
  'seed',
  'profile',
  'max-sessions',
  'max-calls',
  'pricing',
]);

/** The chain `ctxgate serve` runs for a model with this budget and tokenizer (config defaults
 * included), through the same config schema and mapping as serve and `bench replay`. */
export function strategyChainSpec(budget: number, tokenizer: string): ChainSpec {
  const config = parseConfig(
    {
      auth: { mode: 'none' },
      models: [{ name: STRATEGY_MODEL, tokenizer, budget_tokens: budget, workers: [{ url: 'http://127.0.0.1:9' }] }],
    },
    'bench strategies',
  );
  return chainSpecOf(config.models[0], config);
}

export interface StrategiesDeps {
  out?: (s: string) => void;
  err?: (s: string) => void;
}

export async function strategiesCommand(argv: string[], deps: StrategiesDeps = {}): Promise<number> {
  const out = deps.out ?? ((s: string) => process.stdout.write(s));
  const err = deps.err ?? ((s: string) => process.stderr.write(s));
  if (argv.includes('--help') || argv.includes('-h')) {
    out(help + '\n');
    return 0;
  }
  try {
    const args = parseArgs(argv, BOOLEANS, new Set());
    rejectUnknown(args, KNOWN);
    const budget = num(args, 'budget', DEFAULT_BUDGET, 256);
    const seed = num(args, 'seed', 42);
    let sessions: Session[] = args.positional.length
      ? await readSessions(args.positional)
      : generateSessions({
          count: num(args, 'sessions', DEFAULT_SYNTH_SESSIONS, 1),
          seed,
          volatileEvery: 0,
          elisionEvery: 0,
        });
    const maxS = num(args, 'max-sessions', 0);
    if (maxS > 0) sessions = sessions.slice(0, maxS);
    const maxC = num(args, 'max-calls', 0);
    if (maxC > 0) sessions = sessions.map((s) => ({ ...s, calls: s.calls.slice(0, maxC) }));
    const profile = str(args, 'profile');
    if (profile) sessions = applyProfile(sessions, profile, { seed });
    if (!sessions.length) throw new Error('no sessions');
    const tokName = str(args, 'tokenizer') ?? DEFAULT_TOKENIZER;
    const tk = await loadTokenizer(tokName);
    const blockSize = num(args, 'block-size', DEFAULT_BLOCK_SIZE, 1);
    const model = new TokenModel({ encode: (t) => tk.encodeCached(t) }, blockSize);
    const evOpts = { cacheCompletions: bool(args, 'cache-completions') };
    const ev = new StrategyEvaluator(model, budget, await loadPricing(str(args, 'pricing')), evOpts);
    const strategies = [
      fullLog,
      slidingWindow(),
      observationMasking(num(args, 'mask-keep', DEFAULT_MASK_KEEP, 0)),
      ctxgateStrategy(strategyChainSpec(budget, tokName), tk, blockSize),
    ];
    const window = num(args, 'window', budget, 256);
    const results: StrategyResult[] = [];
    for (const s of strategies)
      results.push(
        await (s.name === 'sliding-window' ? new StrategyEvaluator(model, window, ev.pricing, evOpts) : ev).evaluate(
          s,
          sessions,
        ),
      );
    for (const r of results) r.budget = budget;
    if (bool(args, 'json'))
      out(JSON.stringify({ budget, window, sessions: sessions.length, strategies: results }, null, 2) + '\n');
    else {
      out(
        `${sessions.length} sessions, ${results[0].calls} calls, budget M* = ${budget} tokens, tokenizer ${tk.name}\n\n`,
      );
      out(formatStrategyTable(results) + '\n');
    }
    return 0;
  } catch (e) {
    err(`bench strategies: ${(e as Error).message}\n`);
    return e instanceof UsageError ? 2 : 1;
  }
}

export function run(argv: string[]): Promise<number> {
  return strategiesCommand(argv);
}
