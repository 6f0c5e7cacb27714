// Per model: its workers and its routing policy instance.
import { KvEventIndex } from '../../kvplanner/kv-events/event-index.ts';
import { withGuessedEntries } from '../../kvplanner/kv-events/guessed-entries.ts';
import { CTXGATE_DEFAULTS, CtxgatePolicy } from '../../kvplanner/policies/ctxgate.ts';
import { createPolicy } from '../../kvplanner/policy-registry.ts';
import type { Policy, RouteInfo } from '../../kvplanner/types.ts';
import type { GatewayConfig, ModelConfig } from '../config/schema.ts';
import type { GatewayMetrics } from '../metrics.ts';
import { engineOf } from './engines.ts';
import { Worker } from './worker.ts';

export interface ModelRoute {
  config: ModelConfig;
  workers: Worker[];
  byId: Map<string, Worker>;
  policy: Policy;
  /** The precise index fed by workers' KV events (when any worker has `kv_events`). */
  kvIndex?: KvEventIndex;
  /** Replicas keeping session homes in step (Redis): awaited around the policy's select(). */
  placement?: PlacementSync;
}

export interface PlacementSync {
  /** Adopt the session's home another replica stored. Never throws. */
  beforeSelect(info: RouteInfo): Promise<void>;
  /** Store the session's home when select() changed it. Never throws. */
  afterSelect(info: RouteInfo): Promise<void>;
}

export type Fleet = Map<string, ModelRoute>;

export function createFleet(config: GatewayConfig, metrics: GatewayMetrics): Fleet {
  const fleet: Fleet = new Map();
  for (const m of config.models) {
    const engine = engineOf(m);
    const workers = m.workers.map((w) => new Worker(m.name, w, config.upstream, config.health, metrics));
    for (const w of workers) w.healthPath = engine.healthPath;
    // workers with KV events are routed on what their caches hold; the others (and any whose
    // events are not in step) on the policy's own guesses (KvEventIndex.guessed)
    const kvIndex = m.workers.some((w) => w.kv_events) ? new KvEventIndex() : undefined;
    // every worker starts guessed: those with events become precise once their stream is in step
    for (const w of workers)
      kvIndex?.guess(w.id, Math.floor((w.kvTokens ?? CTXGATE_DEFAULTS.default_kv_tokens) / m.block_size));
    // Policies may keep state, so each gets its own (mutable) copy of the frozen options.
    // The model's block_size reaches the policy (its block hashes must match the engine's blocks) unless
    // policy_options names one explicitly.
    // the engine's flavor too (ctxgate remembers more in front of SGLang's prefix-first scheduler)
    const policy = createPolicy(m.policy, {
      block_size: m.block_size,
      engine_flavor: engine.flavor,
      ...(kvIndex ? { index_stride: 1 } : {}),
      ...(structuredClone(m.policy_options) as Record<string, unknown>),
      ...(kvIndex ? { kv_index: kvIndex } : {}),
    });
    // ctxgate keeps a guessed worker's entry itself; the baselines only read the index
    const routed =
      kvIndex && !(policy instanceof CtxgatePolicy) ? withGuessedEntries(policy, kvIndex, m.block_size) : policy;
    // an ejected worker (down, restarting) holds none of the blocks routing guessed for it; a
    // precise entry is the engine's word and follows its KV events (a restart clears it there)
    for (const w of workers) if (routed.forgetWorker) w.onEject = () => routed.forgetWorker!(w.id);
    fleet.set(m.name, { config: m, workers, kvIndex, byId: new Map(workers.map((w) => [w.id, w])), policy: routed });
  }
  return fleet;
}

export function allWorkers(fleet: Fleet): Worker[] {
  return [...fleet.values()].flatMap((r) => r.workers);
}
