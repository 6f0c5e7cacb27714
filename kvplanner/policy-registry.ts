// Policy registry: config name -> Policy instance. The gateway creates one policy per model.
import { RoundRobinPolicy } from './policies/round-robin.ts';
import type { Policy } from './types.ts';

export interface PolicyOptions {
  /** Free-form per-policy settings from the config (validated by the policy's own factory). */
  [k: string]: unknown;
}

type Factory = (opts: PolicyOptions) => Policy;

const FACTORIES: Record<string, Factory> = {
  round_robin: () => new RoundRobinPolicy(),
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
