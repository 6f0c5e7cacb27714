// The contract every `ctxgate` subcommand module exports; cli/main.ts loads them lazily by name.
export interface CommandModule {
  /** One paragraph shown by `ctxgate help NAME` and `ctxgate NAME --help`. */
  help: string;
  /** True when the command dispatches to subcommands that show their own --help. */
  subcommands?: boolean;
  /** Runs the command; resolves to the process exit code. */
  run(argv: string[]): Promise<number>;
}

/**
 * Runs a command: an option `node:util` parseArgs rejects (unknown, missing value, unexpected
 * argument) prints one line, `PREFIX: message`, and exits 2 instead of escaping as a stack trace.
 */
export async function runCommand(prefix: string, mod: CommandModule, argv: string[]): Promise<number> {
  try {
    return await mod.run(argv);
  } catch (err) {
    const e = err as { code?: unknown; message?: unknown };
    if (typeof e.code !== 'string' || !e.code.startsWith('ERR_PARSE_ARGS_')) throw err;
    // node's message, up to its first sentence (the rest explains `--` for positionals)
    const message = String(e.message).split('. ')[0];
    process.stderr.write(`${prefix}: ${message} (${prefix} --help lists the options)\n`);
    return 2;
  }
}
