// Token pricing for replay cost figures: defaults, and `--pricing FILE` (JSON or YAML with the
// same keys as a model's `pricing` in the gateway config).
import { readFile } from 'node:fs/promises';
import { parse as parseYaml } from 'yaml';
import type { Pricing } from './types.ts';

export const DEFAULT_PRICING: Pricing = { input_per_mtok: 1, cached_input_per_mtok: 0.1, output_per_mtok: 4 };

/** Input side only (uncached + cached prompt tokens): output is the same whatever the layout, so it hides the ratio. */
export function inputCostUsd(p: Pricing, prompt: number, cached: number): number {
  return ((prompt - cached) * p.input_per_mtok + cached * p.cached_input_per_mtok) / 1e6;
}

export function costUsd(p: Pricing, prompt: number, cached: number, completion: number): number {
  return (
    ((prompt - cached) * p.input_per_mtok + cached * p.cached_input_per_mtok + completion * p.output_per_mtok) / 1e6
  );
}

export async function loadPricing(path: string | undefined): Promise<Pricing> {
  if (!path) return DEFAULT_PRICING;
  const doc = parseYaml(await readFile(path, 'utf8')) as Record<string, unknown> | null;
  const src =
    doc && typeof doc.pricing === 'object' && doc.pricing ? (doc.pricing as Record<string, unknown>) : (doc ?? {});
  const out = { ...DEFAULT_PRICING };
  for (const k of Object.keys(out) as (keyof Pricing)[]) {
    const v = src[k];
    if (v === undefined) continue;
    if (typeof v !== 'number' || !(v >= 0)) throw new Error(`${path}: pricing.${k} must be a number ≥ 0`);
    out[k] = v;
  }
  return out;
}
