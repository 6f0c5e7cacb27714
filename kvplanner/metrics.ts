// Glue between routing decisions and the gateway's metrics module (gateway/metrics.ts declares
// ctxgate_routing_decisions_total{model,policy,branch}); typed structurally so kvplanner does not
// import the gateway. Branch labels are bounded per policy (POLICY_BRANCHES).
import { POLICY_BRANCHES } from './policy-registry.ts';
import type { Choice, Policy } from './types.ts';

/** What a prom-client Counter<'model'|'policy'|'branch'> offers. */
export interface DecisionCounter {
  inc(labels: { model: string; policy: string; branch: string }, value?: number): void;
}

/** Branch label when a policy found no worker. */
export const NO_WORKER_BRANCH = 'no_worker';

export function recordRoutingDecision(
  counter: DecisionCounter,
  model: string,
  policy: string,
  choice: Choice | null,
): void {
  counter.inc({ model, policy, branch: choice ? choice.branch : NO_WORKER_BRANCH });
}

/**
 * A recorder bound to one model's policy; also creates every branch series at 0 so dashboards
 * show a rate of 0 rather than no data for branches not taken yet.
 */
export function decisionRecorder(
  counter: DecisionCounter,
  model: string,
  policy: Policy,
): (choice: Choice | null) => void {
  for (const branch of [...(POLICY_BRANCHES[policy.name] ?? []), NO_WORKER_BRANCH])
    counter.inc({ model, policy: policy.name, branch }, 0);
  return (choice) => recordRoutingDecision(counter, model, policy.name, choice);
}
