// Data tier: with several alike tenants on the public Mooncake conversation trace, no tenant is
// slowed by the default release order against its own p90 under the arrival-order gate by more
// than 1.2× (review s36 F1: one of 4 tenants read 1.201× before the size classes of
// release-order.ts). Through the command the README gives (`ctxgate bench fleet … --json`), on a
// virtual clock, so the figures do not depend on the machine's load. The trace: $CTXGATE_TRACES,
// else `traces/mooncake/` beside $CTXGATE_TRAJECTORIES (as fleet-targets.test.ts).
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { dataTrajectories } from '../fixtures/trajectories.ts';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const TRACE_FILE = 'conversation_first_half.jsonl';
/** The most one tenant's p90 TTFT may grow under the default against the arrival-order gate's. */
const SLOWDOWN = 1.2;

function conversationTrace(): string {
  const dir = process.env.CTXGATE_TRACES ?? resolve(dataTrajectories(), '../traces/mooncake');
  const file = join(dir, TRACE_FILE);
  if (!existsSync(file)) throw new Error(`the tenant check needs ${file} (set CTXGATE_TRACES)`);
  return file;
}

async function tenantP90s(extra: string[]): Promise<Record<string, number>> {
  const { stdout } = await run(
    process.execPath,
    [
      'bin/ctxgate.js',
      'bench',
      'fleet',
      conversationTrace(),
      '--workers',
      '8',
      '--kv-tokens',
      '200000',
      '--policies',
      'ctxgate',
      '--tenants',
      '4',
      '--json',
      ...extra,
    ],
    { cwd: ROOT, maxBuffer: 64 * 1024 * 1024 },
  );
  const r = (JSON.parse(stdout) as { runs: { tenants: { per_tenant: Record<string, { ttft_p90_ms: number }> } }[] })
    .runs[0];
  return Object.fromEntries(Object.entries(r.tenants.per_tenant).map(([t, v]) => [t, v.ttft_p90_ms]));
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
