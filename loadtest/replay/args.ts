// Tiny argv parser for the bench commands: `--key value`, `--key=value`, boolean flags, and
// multi-value options (`--compare A B C` takes values until the next `--option`).
export interface ParsedArgs {
  flags: Map<string, string[]>;
  positional: string[];
  /** Options given last without their value: rejectUnknown names an unknown one as unknown first. */
  missing: string[];
}

/** A bad command line (the commands exit 2 on it, 1 on a failed run). */
export class UsageError extends Error {}

export function parseArgs(argv: string[], booleans: Set<string>, multi: Set<string>): ParsedArgs {
  const flags = new Map<string, string[]>();
  const positional: string[] = [];
  const missing: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (!a.startsWith('--')) {
      positional.push(a);
      continue;
    }
    const eq = a.indexOf('=');
    const key = eq > 0 ? a.slice(2, eq) : a.slice(2);
    const vals = flags.get(key) ?? [];
    if (eq > 0) vals.push(a.slice(eq + 1));
    else if (booleans.has(key)) vals.push('true');
    else if (multi.has(key)) {
      while (i + 1 < argv.length && !argv[i + 1].startsWith('--')) vals.push(argv[++i]);
    } else {
      if (i + 1 >= argv.length) missing.push(key);
      else vals.push(argv[++i]);
    }
    flags.set(key, vals);
  }
  return { flags, positional, missing };
}

export function str(a: ParsedArgs, key: string): string | undefined {
  const v = a.flags.get(key);
  return v?.length ? v[v.length - 1] : undefined;
}

export function num(a: ParsedArgs, key: string, def: number, min = 0): number {
  const v = str(a, key);
  if (v === undefined) return def;
  const n = Number(v);
  if (!Number.isFinite(n) || n < min) throw new UsageError(`--${key} must be a number ≥ ${min}, got '${v}'`);
  return n;
}

export function bool(a: ParsedArgs, key: string): boolean {
  return str(a, key) === 'true';
}

/** Call right after parseArgs: an unknown option, then a known one given without its value, is a UsageError. */
export function rejectUnknown(a: ParsedArgs, known: Set<string>): void {
  for (const k of [...a.flags.keys(), ...a.missing]) if (!known.has(k)) throw new UsageError(`unknown option --${k}`);
  if (a.missing.length > 0) throw new UsageError(`--${a.missing[0]} needs a value`);
}
