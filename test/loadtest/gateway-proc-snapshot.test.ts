// bench chaos --heap-snapshots: a snapshot holds the gateway's whole heap unredacted (prompts,
// keys, session states), so the file must be its user's alone (0600) whatever the caller's umask
// (Node writes it so; gateway-proc makes sure before handing it on). And a memory reading (SIGUSR2:
// a GC, then the gateway logs its memory) carries the young generation's committed size, the part
// of heapTotal bench chaos's RSS readings turned on.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { writePassthroughGatewayConfig } from '../helpers/passthrough-gateway-config.ts';
import { GATEWAY_NODE_FLAGS } from '../../gateway/node-flags.ts';
import { startGatewayProc } from '../../loadtest/chaos/gateway-proc.ts';

const dir = mkdtempSync(join(tmpdir(), 'ctxgate-gw-snapshot-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it('writes heap snapshots readable by their owner only', async () => {
  const cfg = writePassthroughGatewayConfig(join(dir, 'gw.yaml'));
  const snaps = join(dir, 'snaps');
  mkdirSync(snaps);
  const old = process.umask(0o022); // a usual umask: files 0644 unless the gateway's own is tighter
  let gw: Awaited<ReturnType<typeof startGatewayProc>> | undefined;
  try {
    gw = await startGatewayProc(cfg, [], snaps, undefined, { CTXGATE_TEST_GATEWAY_ENV: 'gateway-only' });
  } finally {
    process.umask(old);
  }
  try {
    // started as deployed: the gateway's Node flags are on its command line
    const argv = readFileSync(`/proc/${gw.pid}/cmdline`, 'utf8').split('\0');
    for (const f of GATEWAY_NODE_FLAGS) expect(argv).toContain(f);
    // the env given for the gateway (bench chaos --gateway-env) is in its environment at exec
    const environ = readFileSync(`/proc/${gw.pid}/environ`, 'utf8').split('\0');
    expect(environ).toContain('CTXGATE_TEST_GATEWAY_ENV=gateway-only');
    const m = await gw.gcMemory();
    expect(m?.newSpace).toBeGreaterThan(0);
    expect(m!.newSpace).toBeLessThanOrEqual(m!.heapTotal);
    // every space's size as V8 reports it (new_space: its capacity, not both semi-spaces)
    expect(m!.spaces?.new_space).toBe(m!.newSpace);
    expect(m!.spaces?.old_space).toBeGreaterThan(0);
    expect(m!.spaces?.old_space).toBeLessThan(m!.heapTotal);
    const file = await gw.heapSnapshot();
    expect(file).toBeDefined();
    expect(statSync(file!).mode & 0o777).toBe(0o600);
  } finally {
    await gw.stop();
  }
}, 240_000);
