// One admission gate per model route with `dispatch: admission`, made on first use and kept as
// long as the route (a WeakMap: no field on the route, no teardown of its own; held calls leave
// through closeGates at drain start).
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

/** Drain start: each route's held calls are answered with `err()` now, never sent, and so is any
 *  call that would be held from now on (routes without a gate are skipped; none is made). */
export function closeGates(routes: Iterable<ModelRoute>, err: () => Error): void {
  for (const r of routes) gates.get(r)?.close(err);
}
