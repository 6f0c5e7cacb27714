// Data tier: with several alike tenants on the public Mooncake conversation trace, no tenant is
// slowed by the default release order against its own p90 under the arrival-order gate by more
// than 1.2× (review s36 F1: one of 4 tenants read 1.201× before the size classes of
// release-order.ts). Through the command the README gives (`ctxgate bench fleet … --json`), on a
// virtual clock, so the figures do not depend on the machine's load. The trace: $CTXGATE_TRACES,
// else `traces/mooncake/` beside $CTXGATE_TRAJECTORIES (as fleet-targets.test.ts).
import { describe, expect, it } from 'vitest';
import { fleetRuns } from './bench-fleet-json.ts';

/** The most one tenant's p90 TTFT may grow under the default against the arrival-order gate's. */
const SLOWDOWN = 1.2;

async function tenantP90s(extra: string[]): Promise<Record<string, number>> {
  type Run = { tenants: { per_tenant: Record<string, { ttft_p90_ms: number }> } };
  const [r] = await fleetRuns<Run>(['--policies', 'ctxgate', '--tenants', '4', ...extra]);
  return Object.fromEntries(Object.entries(r!.tenants.per_tenant).map(([t, v]) => [t, v.ttft_p90_ms]));
}

describe('bench fleet --tenants 4 on the conversation half', () => {
  it(`×1: each tenant's p90 TTFT under the default release order is within ${SLOWDOWN}× of its arrival-order-gate p90`, async () => {
    const [deployed, arrival] = await Promise.all([
      tenantP90s([]),
      tenantP90s(['--release-ms-per-token', '0', '--max-wait-ms', '600000']),
    ]);
    expect(Object.keys(deployed).sort()).toEqual(['t0', 't1', 't2', 't3']);
    for (const [t, p] of Object.entries(deployed))
      expect(p, `${t}: ${p} vs ${arrival[t]} ms`).toBeLessThanOrEqual(SLOWDOWN * arrival[t]);
  });
});
