// Reading per-policy settings from the free-form config object: typed getters that fail loudly
// on a wrong type instead of silently routing with a default. A failure names the option
// (PolicyOptionError.key), so config loading can report its field path.
import type { PolicyOptions } from './types.ts';

export class PolicyOptionError extends Error {
  constructor(
    /** The option, dotted for a map entry (`prefill_tokens_per_s.w0`). */
    readonly key: string,
    /** What is wrong, without the option's name or value (`must be a number >= 1`). */
    readonly detail: string,
    got?: unknown,
  ) {
    super(`routing option '${key}' ${detail}${got === undefined ? '' : `, got ${JSON.stringify(got)}`}`);
  }
}

function range(min: number, max: number): string {
  if (max === Infinity) return min === -Infinity ? 'must be a number' : `must be a number >= ${min}`;
  return min === -Infinity ? `must be a number <= ${max}` : `must be a number in [${min}, ${max}]`;
}

export function num(opts: PolicyOptions, key: string, dflt: number, min = -Infinity, max = Infinity): number {
  const v = opts[key];
  if (v === undefined || v === null) return dflt;
  if (typeof v !== 'number' || !Number.isFinite(v) || v < min || v > max)
    throw new PolicyOptionError(key, range(min, max), v);
  return v;
}

export function bool(opts: PolicyOptions, key: string, dflt: boolean): boolean {
  const v = opts[key];
  if (v === undefined || v === null) return dflt;
  if (typeof v !== 'boolean') throw new PolicyOptionError(key, 'must be true or false', v);
  return v;
}

/** A number, or a map worker id -> number (e.g. per-worker prefill throughput). */
export function numOrMap(opts: PolicyOptions, key: string, dflt: number): (id: string) => number {
  const v = opts[key];
  if (v === undefined || v === null) return () => dflt;
  if (typeof v === 'number' && v > 0) return () => v;
  if (typeof v === 'object' && !Array.isArray(v)) {
    const m = new Map<string, number>();
    for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
      if (typeof x !== 'number' || !(x > 0)) throw new PolicyOptionError(`${key}.${k}`, 'must be a positive number', x);
      m.set(k, x);
    }
    const fallback = m.get('default') ?? dflt;
    return (id) => m.get(id) ?? fallback;
  }
  throw new PolicyOptionError(key, 'must be a positive number or a map of worker id to number', v);
}
