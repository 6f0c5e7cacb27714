// The fleet simulator's config for its tests: 4 engines of the qwen3-32b-h200 preset, 512-token
// blocks, 60k KV tokens each unless `over` says otherwise, and the policy's options built the
// way `bench fleet` builds them (for the KV size asked for).
import { fleetPolicyOptions } from '../../loadtest/fleet/command.ts';
import type { FleetConfig } from '../../loadtest/fleet/simulator.ts';
import { PRESETS } from '../../loadtest/sim-worker/timing.ts';

export const FLEET_TEST_TIMING = PRESETS['qwen3-32b-h200'];

export function fleetConfig(policy: string, over: Partial<FleetConfig> = {}): FleetConfig {
  const kvTokens = over.kvTokens ?? 60_000;
  return {
    policy,
    policyOptions: fleetPolicyOptions(policy, FLEET_TEST_TIMING, 512, kvTokens, 1),
    workers: 4,
    kvTokens,
    blockSize: 512,
    timing: FLEET_TEST_TIMING,
    ...over,
  };
}
