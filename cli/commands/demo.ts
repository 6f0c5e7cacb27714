// `ctxgate demo` / `npm run demo`: see loadtest/demo/run-demo.ts.
import { bool, num, parseArgs, rejectUnknown, str, UsageError } from '../../loadtest/replay/args.ts';
import {
  DEMO_REPORT,
  DEMO_SEED,
  DEMO_SESSIONS,
  DEMO_TOKENIZER,
  DEMO_WORKERS,
  runDemo,
} from '../../loadtest/demo/run-demo.ts';

export const help = `ctxgate demo [options]

Starts an embedded fleet (${DEMO_WORKERS} reference workers) and a ctxgate gateway in this process,
generates deterministic synthetic agent sessions (a realistic system prompt and tools, a task
with explicit constraints, 20–60 calls of file reads, edits, test and compiler logs with ANSI
codes and progress bars, diffs and greps; some sessions with a volatile clock in the system
prompt or SWE-agent-style elision), replays them passthrough (policy round_robin) and through
ctxgate (layout ctxgate, policy ctxgate, budget M* = 16,384 tokens), prints the comparison and
writes an HTML report.
Figures come from the reference worker (a simulator with a real prefix cache and tokenizer,
modeled latency), not from a GPU.

Options
  --sessions N      synthetic sessions (default ${DEMO_SESSIONS})
  --seed N          generator seed (default ${DEMO_SEED})
  --workers N       reference workers (default ${DEMO_WORKERS})
  --tokenizer NAME  qwen3 | llama3_1 | deepseek_v3 | o200k_base | cl100k_base (default ${DEMO_TOKENIZER})
  --chat-template F jinja chat template for workers and gateway (default: the tokenizer's own;
                    deepseek_v3: configs/templates/deepseek-v3-tools.jinja; none = the tokenizer's own)
  --out FILE        HTML report path (default ./${DEMO_REPORT})
  --no-report       do not write the HTML report
  --json            print {"runs": [...], "report", "wall_ms"} instead of the table`;

export async function run(argv: string[]): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(help + '\n');
    return 0;
  }
  try {
    const args = parseArgs(argv, new Set(['json', 'no-report']), new Set());
    rejectUnknown(
      args,
      new Set(['sessions', 'seed', 'workers', 'tokenizer', 'chat-template', 'out', 'no-report', 'json']),
    );
    const r = await runDemo({
      sessions: num(args, 'sessions', DEMO_SESSIONS, 1),
      seed: num(args, 'seed', DEMO_SEED),
      workers: num(args, 'workers', DEMO_WORKERS, 1),
      tokenizer: str(args, 'tokenizer') ?? DEMO_TOKENIZER,
      chatTemplate: str(args, 'chat-template'),
      out: bool(args, 'no-report') ? null : (str(args, 'out') ?? DEMO_REPORT),
      json: bool(args, 'json'),
      progress: true,
    });
    return r.runs.every((x) => x.errors === 0 && x.requests > 0) ? 0 : 1;
  } catch (e) {
    process.stderr.write(`ctxgate demo: ${(e as Error).message}\n`);
    return e instanceof UsageError ? 2 : 1;
  }
}
