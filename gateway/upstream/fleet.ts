// Per model: its workers and its routing policy instance.
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
    fleet.set(m.name, {
      config: m,
      workers,
      byId: new Map(workers.map((w) => [w.id, w])),
      // Policies may keep state, so each gets its own (mutable) copy of the frozen options.
      // The model's block_size reaches the policy (its block hashes must match the engine's blocks) unless
      // policy_options names one explicitly.
      policy: createPolicy(m.policy, {
        block_size: m.block_size,
        ...(structuredClone(m.policy_options) as Record<string, unknown>),
      }),
    });
  }
  return fleet;
}

export function allWorkers(fleet: Fleet): Worker[] {
  return [...fleet.values()].flatMap((r) => r.workers);
}
