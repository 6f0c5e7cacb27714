// `--compare "layout=passthrough,policy=round_robin" "layout=ctxgate,policy=ctxgate"`: each
// string overrides the base fleet spec for one run. Keys: layout, policy, budget, workers,
// flavor, kv_tokens, block_size, name (label), and policy.KEY=VALUE for the model's
// policy_options (`policy.sticky_slack=0`; true/false and numbers are parsed, the rest stays text).
import type { FleetSpec, Layout, PolicyOptionValue } from './types.ts';

export interface RunConfig {
  label: string;
  spec: FleetSpec;
}

const LAYOUTS: Layout[] = ['passthrough', 'ctxgate'];

function posInt(key: string, v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--compare: ${key} must be a positive integer, got '${v}'`);
  return n;
}

const POLICY_PREFIX = 'policy.';

export function parseOptionValue(v: string): PolicyOptionValue {
  if (v === 'true') return true;
  if (v === 'false') return false;
  const n = Number(v);
  return v !== '' && Number.isFinite(n) ? n : v;
}

export function parseConfigSpec(text: string, base: FleetSpec): RunConfig {
  const spec: FleetSpec = { ...base };
  let label: string | undefined;
  for (const part of text
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)) {
    const eq = part.indexOf('=');
    if (eq < 0) throw new Error(`--compare: expected key=value, got '${part}'`);
    const key = part.slice(0, eq).trim().replace(/-/g, '_');
    const v = part.slice(eq + 1).trim();
    if (key.startsWith(POLICY_PREFIX)) {
      const name = key.slice(POLICY_PREFIX.length);
      if (!name) throw new Error(`--compare: expected policy.NAME=VALUE, got '${part}'`);
      spec.policyOptions = { ...spec.policyOptions, [name]: parseOptionValue(v) };
      continue;
    }
    switch (key) {
      case 'layout':
        if (!LAYOUTS.includes(v as Layout))
          throw new Error(`--compare: layout must be passthrough or ctxgate, got '${v}'`);
        spec.layout = v as Layout;
        break;
      case 'policy':
        spec.policy = v;
        break;
      case 'budget':
        spec.budget = posInt(key, v);
        break;
      case 'workers':
        spec.workers = posInt(key, v);
        break;
      case 'kv_tokens':
        spec.kvTokens = posInt(key, v);
        break;
      case 'block_size':
        spec.blockSize = posInt(key, v);
        break;
      case 'flavor':
        if (v !== 'vllm' && v !== 'sglang') throw new Error(`--compare: flavor must be vllm or sglang, got '${v}'`);
        spec.flavor = v;
        break;
      case 'name':
      case 'label':
        label = v;
        break;
      default:
        throw new Error(
          `--compare: unknown key '${key}' (layout, policy, policy.NAME, budget, workers, flavor, kv_tokens, block_size, name)`,
        );
    }
  }
  const opts = Object.entries(spec.policyOptions ?? {})
    .map(([k, val]) => `${k}=${val}`)
    .join(',');
  return {
    label: label ?? `${spec.layout}/${spec.policy}${opts ? `(${opts})` : ''}${spec.budget ? `/M*=${spec.budget}` : ''}`,
    spec,
  };
}
