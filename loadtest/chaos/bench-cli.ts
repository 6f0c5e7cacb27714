// The command-line edge of the benches that run child-process fleets (bench chaos, bench hostile):
// options read with node:util parseArgs (unknown ones rejected), numbers checked under the
// option's name, a bad command line answered with the error and the usage on stderr (exit 2), and
// the progress log on stderr under --json, so stdout carries the JSON report alone.
import { parseArgs } from 'node:util';

export interface BenchOptions<S extends string, B extends string> {
  /** A string option's value, when given. */
  str(name: S): string | undefined;
  /** A number option: positive when `min` is absent, else ≥ min; `def` when not given. */
  num(name: S, def: number, min?: number): number;
  /** A number option rounded to an integer (counts: sessions, workers). */
  int(name: S, def: number, min?: number): number;
  bool(name: B): boolean;
}

export function readOptions<S extends string, B extends string>(
  argv: string[],
  strings: readonly S[],
  booleans: readonly B[],
): BenchOptions<S, B> {
  const options: Record<string, { type: 'string' | 'boolean' }> = {};
  for (const s of strings) options[s] = { type: 'string' };
  for (const b of booleans) options[b] = { type: 'boolean' };
  const { values } = parseArgs({ args: argv, options });
  const num = (name: S, def: number, min?: number): number => {
    const v = values[name];
    const n = v === undefined ? def : Number(v);
    if (min === undefined ? !(Number.isFinite(n) && n > 0) : !(Number.isFinite(n) && n >= min))
      throw new Error(`--${name} must be ${min === undefined ? 'a positive number' : `a number ≥ ${min}`}`);
    return n;
  };
  return {
    str: (name) => values[name] as string | undefined,
    num,
    int: (name, def, min) => Math.round(num(name, def, min)),
    bool: (name) => (values[name] as boolean | undefined) ?? false,
  };
}

/** The parsed options, or the exit code 2 after writing the error and `help` to stderr. */
export function parseOrUsage<O>(command: string, help: string, argv: string[], parse: (argv: string[]) => O): O | 2 {
  try {
    return parse(argv);
  } catch (err) {
    process.stderr.write(`${command}: ${(err as Error).message}\n\n${help}\n`);
    return 2;
  }
}

/** The progress log: stderr under --json (stdout is the report's), stdout otherwise. */
export function benchLog(json: boolean): (line: string) => void {
  return (s) => void (json ? process.stderr : process.stdout).write(`${s}\n`);
}
