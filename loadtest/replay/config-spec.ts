// `--compare "layout=passthrough,policy=round_robin" "layout=ctxgate,policy=ctxgate"`: each
// string overrides the base fleet spec for one run. Keys: layout, policy, budget, workers,
// flavor, kv_tokens, block_size, name (label).
import type { FleetSpec, Layout } from './types.ts';

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

export function parseConfigSpec(text: string, base: FleetSpec): RunConfig {
  const spec: FleetSpec = { ...base };
  let label: string | undefined;
  for (const part of text.split(',').map((p) => p.trim()).filter(Boolean)) {
    const eq = part.indexOf('=');
    if (eq < 0) throw new Error(`--compare: expected key=value, got '${part}'`);
    const key = part.slice(0, eq).trim().replace(/-/g, '_');
    const v = part.slice(eq + 1).trim();
    switch (key) {
      case 'layout':
        if (!LAYOUTS.includes(v as Layout)) throw new Error(`--compare: layout must be passthrough or ctxgate, got '${v}'`);
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
        throw new Error(`--compare: unknown key '${key}' (layout, policy, budget, workers, flavor, kv_tokens, block_size, name)`);
    }
  }
  return { label: label ?? `${spec.layout}/${spec.policy}${spec.budget ? `/M*=${spec.budget}` : ''}`, spec };
}
