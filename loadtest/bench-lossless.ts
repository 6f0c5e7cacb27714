// `ctxgate bench lossless`: the lossless checker over every call of recorded sessions, under every
// agent profile, with and without a budget M* — the context pipeline exactly as `ctxgate serve`
// assembles it (gateway/assemble.ts: layout stages, stabilise → ledger → compaction, leaf note),
// each body JSON round-tripped as over the wire and parsed by the chat ingress adapter, but no
// sockets and no workers: only what the checker needs, so all the data fits on a small machine.
// One fresh pipeline (memory store) per (profile, budget); sessions in order, calls in order.
// O(profiles × budgets × calls × prompt size).
import { assemble } from '../gateway/assemble.ts';
import { parseConfig } from '../gateway/config/load.ts';
import { openaiChat } from '../gateway/ingress/openai-chat.ts';
import { createLosslessTracker } from '../middleware/lossless/check.ts';
import type { ChatRequest } from '../middleware/types.ts';
import { readSessions } from './formats/read-sessions.ts';
import type { Session } from './formats/types.ts';
import { applyProfile, PROFILE_NAMES } from './profiles/index.ts';
import { bool, num, parseArgs, rejectUnknown, str } from './replay/args.ts';
import { chatTemplateFor } from './replay/chat-template.ts';
import { DEFAULT_SEED, DEFAULT_SERVED_MODEL, DEFAULT_TOKENIZER } from './replay/command.ts';
import { gatewayConfigFor } from './replay/fleet.ts';
import { DEFAULT_BLOCK_SIZE } from '../kvplanner/block-hash.ts';

export const DEFAULT_BUDGETS = [0, 8192];
/** Findings printed per run, at most. */
const MAX_SAMPLES = 5;

export const help = `ctxgate bench lossless [options] PATH...

Runs the lossless checker (middleware/lossless/check.ts) over every call of the recorded sessions
at PATH (as for bench replay), through the context pipeline as \`ctxgate serve\` assembles it, once
per profile and budget: agent lines that did not reach the model verbatim (missing), altered
copies (altered), sessions whose first call changed (first_call_changed). No sockets, no workers.

Options
  --profile NAME[,NAME…]  profiles to apply (default: all: ${PROFILE_NAMES.join(', ')})
  --budget N[,N…]         budgets M* to run with; 0 = none (default ${DEFAULT_BUDGETS.join(',')})
  --tokenizer NAME        (default ${DEFAULT_TOKENIZER}); --chat-template FILE as for bench replay
  --session-header        send x-session-id (default off: derived session ids, as agents do)
  --max-sessions N        --max-calls N   truncate the input
  --seed N                profile seed (default ${DEFAULT_SEED})
  --json                  {"runs": [{profile, budget, sessions, calls, missing, altered,
                          first_call_changed, moved, restored, compacted, samples, wall_ms}]}`;

const BOOLEANS = new Set(['json', 'session-header']);
const KNOWN = new Set([
  ...BOOLEANS,
  'profile',
  'budget',
  'tokenizer',
  'chat-template',
  'max-sessions',
  'max-calls',
  'seed',
]);

export interface LosslessRun {
  profile: string;
  budget: number;
  sessions: number;
  calls: number;
  missing: number;
  altered: number;
  first_call_changed: number;
  moved: number;
  restored: number;
  compacted: number;
  samples: string[];
  wall_ms: number;
}

export interface LosslessRunOptions {
  tokenizer: string;
  chatTemplate?: string;
  sessionHeader?: boolean;
}

/** One (profile, budget) run over already-profiled sessions. */
export async function losslessRun(
  sessions: Session[],
  profile: string,
  budget: number,
  o: LosslessRunOptions,
): Promise<LosslessRun> {
  const t0 = Date.now();
  const config = parseConfig(
    withoutPool(
      gatewayConfigFor(
        {
          model: DEFAULT_SERVED_MODEL,
          tokenizer: o.tokenizer,
          chatTemplate: o.chatTemplate,
          flavor: 'vllm',
          layout: 'ctxgate',
          policy: 'round_robin',
          blockSize: DEFAULT_BLOCK_SIZE,
          budget: budget || undefined,
          kvTokens: 1,
          workers: 1,
          timeScale: 0,
          seed: 0,
        },
        ['http://127.0.0.1:9'],
      ),
    ),
    'bench lossless',
  );
  const a = assemble(config, { reporting: false });
  const run: LosslessRun = {
    profile,
    budget,
    sessions: sessions.length,
    calls: 0,
    missing: 0,
    altered: 0,
    first_call_changed: 0,
    moved: 0,
    restored: 0,
    compacted: 0,
    samples: [],
    wall_ms: 0,
  };
  try {
    const pipelineFor = a.deps.pipelineFor;
    if (!pipelineFor) throw new Error('the assembled gateway has no pipeline');
    const pipeline = pipelineFor(config.models[0]);
    for (const s of sessions) {
      const tracker = createLosslessTracker();
      for (const [turn, call] of s.calls.entries()) {
        // As over the wire: the recorded body, model rewritten, serialised and parsed by the adapter.
        const wire = JSON.stringify({ ...call.body, model: DEFAULT_SERVED_MODEL, stream: false });
        const parsed = await openaiChat.parse(JSON.parse(wire), { tenant: 'default', maxMessages: 100_000 });
        const client = JSON.parse(wire) as ChatRequest;
        const res = await pipeline.process(parsed.body, {
          tenant: 'default',
          requestId: `${s.id}#${turn}`,
          headers: o.sessionHeader ? { 'x-session-id': s.id } : {},
          model: DEFAULT_SERVED_MODEL,
        });
        const r = tracker.check(client, res.body, res.receipts);
        run.calls++;
        run.missing += r.missing;
        run.altered += r.altered;
        run.first_call_changed += r.first_call_changed;
        run.moved += r.moved;
        run.restored += r.restored;
        run.compacted += r.compacted;
        for (const d of r.details) {
          if (run.samples.length >= MAX_SAMPLES) break;
          if (d.kind !== 'first_call_changed' || r.first_call_changed)
            run.samples.push(`${s.id}#${turn} ${d.kind} m${d.message}: ${d.line}`);
        }
      }
    }
  } finally {
    await a.close();
  }
  run.wall_ms = Date.now() - t0;
  return run;
}

/** Inline rendering: the pool's output equals it (gateway tests), and threads per run cost startup. */
const withoutPool = (cfg: unknown): unknown => ({ ...(cfg as object), render_pool: { threads: 0 } });

const list = (v: string | undefined): string[] | undefined =>
  v
    ?.split(',')
    .map((x) => x.trim())
    .filter(Boolean);

export async function run(argv: string[]): Promise<number> {
  const out = (s: string) => process.stdout.write(s);
  try {
    const args = parseArgs(argv, BOOLEANS, new Set());
    rejectUnknown(args, KNOWN);
    if (!args.positional.length) throw new Error('give at least one trajectory file or folder (see --help)');
    const profiles = list(str(args, 'profile')) ?? PROFILE_NAMES;
    for (const p of profiles) if (!PROFILE_NAMES.includes(p)) throw new Error(`unknown profile '${p}'`);
    const budgets = (list(str(args, 'budget')) ?? DEFAULT_BUDGETS.map(String)).map((b) => {
      const n = Number(b);
      if (!Number.isInteger(n) || n < 0) throw new Error(`--budget: '${b}' is not a whole number of tokens`);
      return n;
    });
    const tokenizer = str(args, 'tokenizer') ?? DEFAULT_TOKENIZER;
    const opts: LosslessRunOptions = {
      tokenizer,
      chatTemplate: chatTemplateFor(tokenizer, str(args, 'chat-template')),
      sessionHeader: bool(args, 'session-header'),
    };
    let sessions = await readSessions(args.positional);
    const maxS = num(args, 'max-sessions', 0);
    if (maxS > 0) sessions = sessions.slice(0, maxS);
    const maxC = num(args, 'max-calls', 0);
    if (maxC > 0) sessions = sessions.map((s) => ({ ...s, calls: s.calls.slice(0, maxC) }));
    const seed = num(args, 'seed', DEFAULT_SEED);
    const runs: LosslessRun[] = [];
    for (const p of profiles) {
      const profiled = applyProfile(sessions, p, { seed });
      for (const b of budgets) {
        const r = await losslessRun(profiled, p, b, opts);
        runs.push(r);
        if (!bool(args, 'json'))
          out(
            `${p.padEnd(15)} M*=${String(b || '-').padEnd(6)} ${r.sessions} sessions ${r.calls} calls: missing ${r.missing}, altered ${r.altered}, first calls changed ${r.first_call_changed} (moved ${r.moved}, restored ${r.restored}, compacted ${r.compacted}) ${(r.wall_ms / 1000).toFixed(1)} s\n${r.samples.map((x) => `  ${x}\n`).join('')}`,
          );
      }
    }
    if (bool(args, 'json')) out(JSON.stringify({ runs }, null, 2) + '\n');
    return runs.some((r) => r.missing || r.altered || r.first_call_changed) ? 1 : 0;
  } catch (e) {
    process.stderr.write(`bench lossless: ${(e as Error).message}\n`);
    return 2;
  }
}
