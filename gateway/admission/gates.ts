// One admission gate per model route with `dispatch: admission`, made on first use and kept as
// long as the route (a WeakMap: no field on the route, no teardown of its own; held calls leave
// through their request signal at shutdown, where routing answers them as today).
import type { ModelRoute } from '../upstream/fleet.ts';
import { AdmissionGate } from './admission-gate.ts';

const gates = new WeakMap<ModelRoute, AdmissionGate | null>();

/** The route's gate, or undefined when the model routes at arrival. */
export function gateFor(route: ModelRoute): AdmissionGate | undefined {
  let g = gates.get(route);
  if (g === undefined) {
    g =
      route.config.dispatch === 'admission'
        ? new AdmissionGate(route.config.name, () => route.workers, route.policy, route.config.admission)
        : null;
    gates.set(route, g);
  }
  return g ?? undefined;
}
