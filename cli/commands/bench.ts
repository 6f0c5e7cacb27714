// ctxgate bench <name>: one table of sub-benchmarks, each a module exporting `help` and `run(argv)`,
// loaded lazily so one benchmark's dependencies never slow another down.
import { type CommandModule, runCommand } from '../command.ts';

const BENCHES: Record<string, () => Promise<CommandModule>> = {
  overhead: () => import('../../loadtest/bench-overhead.ts'),
  calibrate: () => import('../../loadtest/bench-calibrate.ts'),
  replay: () => import('../../loadtest/replay/command.ts'),
  strategies: () => import('../../loadtest/bench-strategies.ts'),
  lossless: () => import('../../loadtest/bench-lossless.ts'),
  routing: () => import('../../kvplanner/bench-routing.ts'),
  middleware: () => import('../../middleware/bench-middleware.ts'),
  tokens: () => import('../../loadtest/bench-tokens.ts'),
  chaos: () => import('../../loadtest/bench-chaos.ts'),
  hostile: () => import('../../loadtest/bench-hostile.ts'),
  fleet: () => import('../../loadtest/fleet/command.ts'),
  loadgen: () => import('../../loadtest/load/bench-loadgen.ts'),
};

export const subcommands = true;

/** The benchmarks' names, in table order (`ctxgate --help` lists them without loading any). */
export const BENCH_NAMES: readonly string[] = Object.keys(BENCHES);

export const help = `ctxgate bench <${BENCH_NAMES.join('|')}> [options]

Runs one benchmark. ctxgate bench <name> --help shows its options.`;

export async function run(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === '--help' || name === '-h') {
    process.stdout.write(help + '\n');
    return name ? 0 : 2;
  }
  const load = BENCHES[name];
  if (!load) {
    process.stderr.write(`ctxgate bench: unknown benchmark '${name}' (known: ${BENCH_NAMES.join(', ')})\n`);
    return 2;
  }
  let mod: CommandModule;
  try {
    mod = await load();
  } catch (err) {
    const e = err as { code?: string; message: string };
    const missing = e.code === 'ERR_MODULE_NOT_FOUND' || /Cannot find module/.test(e.message);
    process.stderr.write(
      missing
        ? `ctxgate bench: benchmark '${name}' is not available in this build (its module is missing: ${e.message.split('\n')[0]})\n`
        : `ctxgate bench: benchmark '${name}' failed to load: ${e.message}\n`,
    );
    return 2;
  }
  if (rest.includes('--help') || rest.includes('-h')) {
    process.stdout.write(mod.help + '\n');
    return 0;
  }
  return runCommand(`ctxgate bench ${name}`, mod, rest);
}
