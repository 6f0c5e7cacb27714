// Per-model prices. A model is priced by (first match wins): its own `pricing` in the gateway
// config, the pricing table entry for its name, the entry for its upstream_model, the table's
// `default`. Two kinds: token prices (USD per Mtok: input, cached input, output, optional cache
// write) or GPU time ($/GPU-hour × the worker's prefill + decode seconds).
// Prices become integer pico-dollars per token at load (see money.ts), once, not per request.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';
import type { GatewayConfig } from '../../config/schema.ts';
import { microPerHour, picoPerToken } from '../types/money.ts';

/** Documented defaults (configs/pricing.yaml `default`): $1/M input, $0.10/M cached, $4/M output. */
export const DEFAULT_INPUT_PER_MTOK = 1;
export const DEFAULT_CACHED_INPUT_PER_MTOK = 0.1;
export const DEFAULT_OUTPUT_PER_MTOK = 4;
export const DEFAULT_PRICING_FILE = join(dirname(fileURLToPath(import.meta.url)), '../../../configs/pricing.yaml');

export interface TokenPriceSpec {
  input_per_mtok: number;
  cached_input_per_mtok: number;
  output_per_mtok: number;
  cache_write_per_mtok?: number;
}
export interface GpuPriceSpec {
  gpu_hour_usd: number;
}
export type PriceSpec = TokenPriceSpec | GpuPriceSpec;

export interface PricingTable {
  default?: PriceSpec;
  models: Record<string, PriceSpec>;
}

export type Pricing =
  | {
      kind: 'token';
      inputPico: number;
      cachedPico: number;
      outputPico: number;
      cacheWritePico: number | null;
      source: string;
    }
  | { kind: 'gpu'; gpuMicroPerHour: number; source: string };

export const DEFAULT_PRICING_TABLE: PricingTable = Object.freeze({
  default: {
    input_per_mtok: DEFAULT_INPUT_PER_MTOK,
    cached_input_per_mtok: DEFAULT_CACHED_INPUT_PER_MTOK,
    output_per_mtok: DEFAULT_OUTPUT_PER_MTOK,
  },
  models: {},
});

export class PricingError extends Error {
  constructor(
    readonly path: string,
    message: string,
  ) {
    super(message);
  }
}

function isGpu(s: PriceSpec): s is GpuPriceSpec {
  return (s as GpuPriceSpec).gpu_hour_usd !== undefined;
}

function checkPrice(v: unknown, path: string, optional = false): void {
  if (optional && v === undefined) return;
  if (typeof v !== 'number' || !Number.isFinite(v) || v < 0)
    throw new PricingError(path, `${path}: expected a non-negative price, got ${JSON.stringify(v)}`);
}

/** Checks one price spec; throws PricingError naming the field. */
export function checkPriceSpec(spec: unknown, path: string): asserts spec is PriceSpec {
  if (!spec || typeof spec !== 'object') throw new PricingError(path, `${path}: expected a price mapping`);
  const s = spec as Record<string, unknown>;
  if (s.gpu_hour_usd !== undefined) {
    checkPrice(s.gpu_hour_usd, `${path}.gpu_hour_usd`);
    return;
  }
  checkPrice(s.input_per_mtok, `${path}.input_per_mtok`);
  checkPrice(s.cached_input_per_mtok, `${path}.cached_input_per_mtok`);
  checkPrice(s.output_per_mtok, `${path}.output_per_mtok`);
  checkPrice(s.cache_write_per_mtok, `${path}.cache_write_per_mtok`, true);
  // A cache read dearer than a fresh prefill is a typo, and it would turn savings negative.
  if ((s.cached_input_per_mtok as number) > (s.input_per_mtok as number))
    throw new PricingError(
      `${path}.cached_input_per_mtok`,
      `${path}.cached_input_per_mtok: cached input price exceeds the input price`,
    );
}

export function compilePricing(spec: PriceSpec, source: string): Pricing {
  if (isGpu(spec)) return { kind: 'gpu', gpuMicroPerHour: microPerHour(spec.gpu_hour_usd), source };
  return {
    kind: 'token',
    inputPico: picoPerToken(spec.input_per_mtok),
    cachedPico: picoPerToken(spec.cached_input_per_mtok),
    outputPico: picoPerToken(spec.output_per_mtok),
    cacheWritePico: spec.cache_write_per_mtok === undefined ? null : picoPerToken(spec.cache_write_per_mtok),
    source,
  };
}

/** Parses a pricing table (YAML text: `default:` and `models: {name: spec}`). */
export function parsePricingTable(text: string, source = 'pricing'): PricingTable {
  const raw = (parseYaml(text) ?? {}) as { default?: unknown; models?: Record<string, unknown> };
  const table: PricingTable = { models: {} };
  if (raw.default !== undefined) {
    checkPriceSpec(raw.default, `${source}: default`);
    table.default = raw.default;
  }
  for (const [name, spec] of Object.entries(raw.models ?? {})) {
    checkPriceSpec(spec, `${source}: models.${name}`);
    table.models[name] = spec;
  }
  return table;
}

export function loadPricingTable(path = DEFAULT_PRICING_FILE): PricingTable {
  return parsePricingTable(readFileSync(path, 'utf8'), path);
}

type ModelLike = Pick<GatewayConfig['models'][number], 'name' | 'upstream_model' | 'pricing'>;

function resolveSpec(m: ModelLike, table: PricingTable | null): { spec: PriceSpec; source: string } | undefined {
  if (m.pricing) return { spec: m.pricing, source: 'config' };
  if (!table) return undefined;
  const byName = table.models[m.name];
  if (byName) return { spec: byName, source: `table:${m.name}` };
  const byUpstream = m.upstream_model ? table.models[m.upstream_model] : undefined;
  if (byUpstream) return { spec: byUpstream, source: `table:${m.upstream_model}` };
  if (table.default) return { spec: table.default, source: 'table:default' };
  return undefined;
}

export interface ValidatePricingOptions {
  /** Fallback table; DEFAULT_PRICING_TABLE when omitted, `null` for none (explicit prices only). */
  table?: PricingTable | null;
  /** When false, unpriced models are allowed (they record pricingKind 'none', cost 0). */
  costReporting?: boolean;
}

/**
 * The load-time rule: with cost reporting on, every model must resolve to a price, or the config
 * is rejected (a silently free model would under-report spend). Returns the compiled prices.
 */
export function validatePricing(
  config: { models: readonly ModelLike[] },
  opts: ValidatePricingOptions = {},
): Map<string, Pricing> {
  const table = opts.table === undefined ? DEFAULT_PRICING_TABLE : opts.table;
  const out = new Map<string, Pricing>();
  config.models.forEach((m, i) => {
    if (m.pricing) checkPriceSpec(m.pricing, `models[${i}].pricing`);
    const r = resolveSpec(m, table);
    if (!r) {
      if (opts.costReporting === false) return;
      throw new PricingError(
        `models[${i}].pricing`,
        `models[${i}].pricing: model '${m.name}' has no price and cost reporting is on (set pricing, or add it to the pricing table)`,
      );
    }
    out.set(m.name, compilePricing(r.spec, r.source));
  });
  return out;
}

/** `pricingFor(model)` for the recorder: validated prices, then the table default for unknown names. */
export function createPricingLookup(
  config: { models: readonly ModelLike[] },
  opts: ValidatePricingOptions = {},
): (model: string) => Pricing | undefined {
  const known = validatePricing(config, opts);
  const table = opts.table === undefined ? DEFAULT_PRICING_TABLE : opts.table;
  const fallback = table?.default ? compilePricing(table.default, 'table:default') : undefined;
  const cache = new Map<string, Pricing | undefined>();
  return (model) => {
    const hit = known.get(model);
    if (hit) return hit;
    if (cache.has(model)) return cache.get(model);
    const spec = table?.models[model];
    const p = spec ? compilePricing(spec, `table:${model}`) : fallback;
    cache.set(model, p);
    return p;
  };
}
