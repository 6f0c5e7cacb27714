// ctxgate command line: one table of subcommands, each loaded lazily from the file that owns it,
// so `ctxgate --help` never pays for the tokenizers or the server.
import { type CommandModule, runCommand } from './command.ts';
// the names only: the table's modules load lazily, as the commands' own do
import { BENCH_NAMES } from './commands/bench.ts';

interface CommandEntry {
  summary: string;
  load: () => Promise<CommandModule>;
}

const COMMANDS: Record<string, CommandEntry> = {
  up: {
    summary: 'reference workers + gateway in one command: ctxgate up [--workers N] [--port P]',
    load: () => import('./commands/up.ts'),
  },
  serve: { summary: 'run the gateway: ctxgate serve --config FILE', load: () => import('./commands/serve.ts') },
  'sim-worker': {
    summary: 'run a reference worker (vLLM/SGLang stand-in with a real prefix cache)',
    load: () => import('./commands/sim-worker.ts'),
  },
  demo: {
    summary: 'embedded fleet + gateway + synthetic agents + report (< 60 s)',
    load: () => import('./commands/demo.ts'),
  },
  bench: {
    summary: `benchmarks: ${BENCH_NAMES.join(' | ')}`,
    load: () => import('./commands/bench.ts'),
  },
  loadtest: {
    summary: 'multi-turn agent sessions through autocannon against a live endpoint: req/s, latency, TTFT, hit rate',
    load: () => import('./commands/loadtest.ts'),
  },
  explain: {
    summary: 'per-call prefix-cache table for a recorded session',
    load: () => import('./commands/explain.ts'),
  },
  plan: { summary: 'KV capacity planning for a model on a GPU', load: () => import('./commands/plan.ts') },
  report: { summary: 'FinOps report from the usage ledger', load: () => import('./commands/report.ts') },
};

function usage(): string {
  const lines = ['usage: ctxgate <command> [options]', '', 'commands:'];
  for (const [name, c] of Object.entries(COMMANDS)) lines.push(`  ${name.padEnd(12)} ${c.summary}`);
  lines.push('', 'ctxgate <command> --help  shows the options of one command.');
  return lines.join('\n');
}

export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    if (name === 'help' && rest[0] && COMMANDS[rest[0]]) {
      const mod = await COMMANDS[rest[0]].load();
      process.stdout.write(mod.help + '\n');
      return 0;
    }
    process.stdout.write(usage() + '\n');
    return 0;
  }
  const entry = COMMANDS[name];
  if (!entry) {
    process.stderr.write(`ctxgate: unknown command '${name}'\n\n${usage()}\n`);
    return 2;
  }
  let mod: CommandModule;
  try {
    mod = await entry.load();
  } catch (err) {
    process.stderr.write(`ctxgate: command '${name}' is not available: ${(err as Error).message}\n`);
    return 2;
  }
  if ((rest.includes('--help') || rest.includes('-h')) && !(mod.subcommands && rest[0] && !rest[0].startsWith('-'))) {
    process.stdout.write(mod.help + '\n');
    return 0;
  }
  return runCommand(`ctxgate ${name}`, mod, rest);
}
