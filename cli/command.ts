// The contract every `ctxgate` subcommand module exports; cli/main.ts loads them lazily by name.
export interface CommandModule {
  /** One paragraph shown by `ctxgate help NAME` and `ctxgate NAME --help`. */
  help: string;
  /** True when the command dispatches to subcommands that show their own --help. */
  subcommands?: boolean;
  /** Runs the command; resolves to the process exit code. */
  run(argv: string[]): Promise<number>;
}
