// Reading per-policy settings from the free-form config object: typed getters that fail loudly
// on a wrong type instead of silently routing with a default.
import type { PolicyOptions } from './types.ts';

export function num(opts: PolicyOptions, key: string, dflt: number, min = -Infinity, max = Infinity): number {
  const v = opts[key];
  if (v === undefined || v === null) return dflt;
  if (typeof v !== 'number' || !Number.isFinite(v) || v < min || v > max) {
    throw new Error(`routing option '${key}' must be a number in [${min}, ${max}], got ${JSON.stringify(v)}`);
  }
  return v;
}

export function bool(opts: PolicyOptions, key: string, dflt: boolean): boolean {
  const v = opts[key];
  if (v === undefined || v === null) return dflt;
  if (typeof v !== 'boolean')
    throw new Error(`routing option '${key}' must be true or false, got ${JSON.stringify(v)}`);
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
      if (typeof x !== 'number' || !(x > 0)) throw new Error(`routing option '${key}.${k}' must be a positive number`);
      m.set(k, x);
    }
    const fallback = m.get('default') ?? dflt;
    return (id) => m.get(id) ?? fallback;
  }
  throw new Error(`routing option '${key}' must be a positive number or a map of worker id to number`);
}
