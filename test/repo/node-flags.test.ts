// The gateway's Node flags (gateway/node-flags.ts) reach the places that start a gateway: the image's
// ENTRYPOINT, `bench overhead`'s gateway child and `bench chaos`'s gateway process, so the bench measures the process as deployed.
// And the flag does what its comment says on this Node: the young generation grows past Node 20's
// default (two 16 MB semi-spaces) only with it.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { GATEWAY_NODE_FLAGS } from '../../gateway/node-flags.ts';
import { proxiesNodeArgs } from '../../loadtest/bench-overhead.ts';
import { gatewayProcArgs } from '../../loadtest/chaos/gateway-proc.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const MB = 1024 * 1024;

/** new_space capacity (bytes) after allocating objects that stay alive across scavenges. */
function grownNewSpace(flags: readonly string[]): number {
  const script = `
    const v8 = require('node:v8');
    let keep = [];
    for (let i = 0; i < 2e6; i++) { keep.push({ i, s: "x" + i }); if (keep.length > 300000) keep = []; }
    process.stdout.write(String(v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size));`;
  const r = spawnSync(process.execPath, [...flags, '-e', script], {
    encoding: 'utf8',
    env: { ...process.env, NODE_OPTIONS: '' },
  });
  expect(r.status, r.stderr).toBe(0);
  return Number(r.stdout);
}

describe('gateway Node flags', () => {
  it("the image's ENTRYPOINT starts node with every gateway flag, before the CLI", () => {
    const d = readFileSync(`${ROOT}Dockerfile`, 'utf8');
    const m = /^ENTRYPOINT (\[.*\])$/m.exec(d);
    expect(m).not.toBeNull();
    expect(JSON.parse(m![1])).toEqual(['node', ...GATEWAY_NODE_FLAGS, '/app/bin/ctxgate.js']);
  });

  it("bench overhead's gateway child gets them (and a CPU profile when asked)", () => {
    expect(proxiesNodeArgs()).toEqual([...GATEWAY_NODE_FLAGS]);
    expect(proxiesNodeArgs('/tmp/prof')).toEqual([...GATEWAY_NODE_FLAGS, '--cpu-prof', '--cpu-prof-dir=/tmp/prof']);
  });

  it("bench chaos's (and bench hostile's) gateway process gets them, before the CLI", () => {
    const args = gatewayProcArgs('/tmp/c.yaml', ['--cpu-prof']);
    expect(args.slice(0, GATEWAY_NODE_FLAGS.length + 1)).toEqual([...GATEWAY_NODE_FLAGS, '--cpu-prof']);
    expect(args.indexOf('serve')).toBeGreaterThan(GATEWAY_NODE_FLAGS.length);
  });

  it('the young generation grows past the default only with them', () => {
    expect(grownNewSpace([])).toBeLessThanOrEqual(32 * MB);
    expect(grownNewSpace(GATEWAY_NODE_FLAGS)).toBeGreaterThan(32 * MB);
  });
});
