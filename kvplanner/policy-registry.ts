// Policy registry: config name -> Policy instance. The gateway creates one policy per model.
import { CTXGATE_BRANCHES, CtxgatePolicy } from './policies/ctxgate.ts';
import { DYNAMO_BRANCHES, DynamoKvPolicy } from './policies/dynamo-kv.ts';
import { LEAST_LOAD_BRANCHES, LeastLoadPolicy } from './policies/least-load.ts';
import { LLMD_BRANCHES, LlmdPrecisePolicy } from './policies/llmd-precise.ts';
import { PREFIX_HASH_BRANCHES, PrefixHashPolicy } from './policies/prefix-hash.ts';
import { RoundRobinPolicy } from './policies/round-robin.ts';
import { SESSION_HASH_BRANCHES, SessionHashPolicy } from './policies/session-hash.ts';
import { SGLANG_BRANCHES, SglangCacheAwarePolicy } from './policies/sglang-cache-aware.ts';
import { SMG_BRANCHES, SmgCacheAwarePolicy } from './policies/smg-cache-aware.ts';
import { PolicyOptionError } from './policy-options.ts';
import type { Policy, PolicyOptions } from './types.ts';

type Factory = (opts: PolicyOptions) => Policy;

const FACTORIES: Record<string, Factory> = {
  round_robin: () => new RoundRobinPolicy(),
  least_load: (o) => new LeastLoadPolicy(o),
  session_hash: (o) => new SessionHashPolicy(o),
  prefix_hash: (o) => new PrefixHashPolicy(o),
  sglang_cache_aware: (o) => new SglangCacheAwarePolicy(o),
  smg_cache_aware: (o) => new SmgCacheAwarePolicy(o),
  dynamo_kv: (o) => new DynamoKvPolicy(o),
  llmd_precise: (o) => new LlmdPrecisePolicy(o),
  ctxgate: (o) => new CtxgatePolicy(o),
};

/** Branch labels each built-in policy can return (bounded: safe as a metric label). */
export const POLICY_BRANCHES: Record<string, readonly string[]> = {
  round_robin: ['rotate'],
  least_load: LEAST_LOAD_BRANCHES,
  session_hash: SESSION_HASH_BRANCHES,
  prefix_hash: PREFIX_HASH_BRANCHES,
  sglang_cache_aware: SGLANG_BRANCHES,
  smg_cache_aware: SMG_BRANCHES,
  dynamo_kv: DYNAMO_BRANCHES,
  llmd_precise: LLMD_BRANCHES,
  ctxgate: CTXGATE_BRANCHES,
};

export const POLICY_NAMES = (): string[] => Object.keys(FACTORIES);

export function registerPolicy(name: string, factory: Factory): void {
  FACTORIES[name] = factory;
}

export function createPolicy(name: string, opts: PolicyOptions = {}): Policy {
  const f = FACTORIES[name];
  if (!f) throw new Error(`unknown routing policy '${name}' (known: ${Object.keys(FACTORIES).join(', ')})`);
  return f(opts);
}

/**
 * The first problem with a policy's options, or undefined. The policy is built once over them
 * (construction is cheap and has no side effects), recording which options it reads: a value it
 * rejects names its option, and a key of `configKeys` it never reads is no option of that policy.
 */
export function checkPolicyOptions(
  name: string,
  opts: PolicyOptions,
  configKeys: readonly string[],
): { key: string; message: string } | undefined {
  const read = new Set<string>();
  const recorded = new Proxy(opts, {
    get(target, k) {
      if (typeof k === 'string') read.add(k);
      return Reflect.get(target, k);
    },
  });
  try {
    createPolicy(name, recorded);
  } catch (err) {
    if (err instanceof PolicyOptionError) return { key: err.key, message: err.detail };
    return { key: '', message: (err as Error).message };
  }
  const unknown = configKeys.find((k) => !read.has(k));
  if (unknown === undefined) return undefined;
  const known = [...read].filter((k) => !GATEWAY_SET_OPTIONS.has(k)).sort();
  return {
    key: unknown,
    message: `not an option of policy '${name}' (${known.length ? `known: ${known.join(', ')}` : 'it takes none'})`,
  };
}

/** Whether a policy reads a precise index (option `kv_index`): built once with default options,
 *  recording what it reads, as checkPolicyOptions does. */
export function readsKvIndex(name: string): boolean {
  let read = false;
  const recorded = new Proxy({} as PolicyOptions, {
    get(target, k) {
      if (k === 'kv_index') read = true;
      return Reflect.get(target, k);
    },
  });
  try {
    createPolicy(name, recorded);
  } catch {
    return false;
  }
  return read;
}

/** Options the gateway sets itself (from the model config and its KV events), not listed as known. */
const GATEWAY_SET_OPTIONS = new Set(['kv_index', 'index_stride', 'engine_flavor']);
