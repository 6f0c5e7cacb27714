// The gateway's Node flags (gateway/node-flags.ts) reach the places that start a gateway: the image's
// ENTRYPOINT, `bench overhead`'s gateway child and `bench chaos`'s gateway process, so the bench measures the process as deployed;
// `bench overhead`'s Portkey gets them too, so the peer comparison is like for like.
// And the flag does what its comment says on this Node: the young generation grows past Node 20's
// default (two 16 MB semi-spaces) only with it. `ctxgate serve` started without them (outside the
// image) warns at start-up, and not when they are given on the command line or in NODE_OPTIONS.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { GATEWAY_NODE_FLAGS, missingNodeFlags } from '../../gateway/node-flags.ts';
import { parseGatewayNodeFlags, portkeyNodeArgs, proxiesNodeArgs } from '../../loadtest/bench-overhead.ts';
import { startPortkey } from '../../loadtest/overhead/load.ts';
import { gatewayProcArgs } from '../../loadtest/chaos/gateway-proc.ts';
import { waitForStart } from '../helpers/child-start.ts';
import { nodeChildOutput } from '../helpers/node-child.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const MB = 1024 * 1024;
/** The start cases wait for their children by what the children do, not by a wall-clock bound
 *  (test/helpers/child-start.ts: at load ~27 a start outlasted the former 150 s bound). This is
 *  vitest's last resort for a hang the watch cannot see (a busy child on a very loaded host). */
const START_TEST_TIMEOUT_MS = 600_000;

/** new_space capacity (bytes) after allocating objects that stay alive across scavenges. 1e6
 *  objects grow it to the 64 MB flag's full 128 MB (6e5 reach 64 MB), where 2e6 took ~50 % more CPU. */
async function grownNewSpace(flags: readonly string[]): Promise<number> {
  const script = `
    const v8 = require('node:v8');
    let keep = [];
    for (let i = 0; i < 1e6; i++) { keep.push({ i, s: "x" + i }); if (keep.length > 300000) keep = []; }
    process.stdout.write(String(v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size));`;
  return Number(await nodeChildOutput([...flags, '-e', script]));
}

/** Threads of a child node started with `flags`: Node starts V8's helper threads (its platform's
 *  pool) with the process, so they are all up once the script runs. */
async function threadCount(flags: readonly string[]): Promise<number> {
  const script = "process.stdout.write(String(require('node:fs').readdirSync('/proc/self/task').length))";
  return Number(await nodeChildOutput([...flags, '-e', script]));
}

/** `ctxgate serve`'s log lines up to 'ctxgate listening' (then it is stopped), node started with `nodeArgs`. */
async function serveStartLog(nodeArgs: string[], nodeOptions: string): Promise<{ level: number; msg: string }[]> {
  const dir = mkdtempSync(join(tmpdir(), 'ctxgate-node-flags-'));
  const cfg = join(dir, 'gw.yaml');
  writeFileSync(
    cfg,
    `listen: { host: 127.0.0.1, port: 0 }\nhealth: { interval_ms: 0 }\nledger: { path: '${join(dir, 'usage.sqlite')}' }\n` +
      `models:\n  - name: m1\n    layout: passthrough\n    workers: [{ url: 'http://127.0.0.1:1', id: w1 }]\n`,
  );
  const child = spawn(process.execPath, [...nodeArgs, `${ROOT}bin/ctxgate.js`, 'serve', '--config', cfg], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, NODE_OPTIONS: nodeOptions },
  });
  let out: string;
  try {
    out = await waitForStart(child, (o) => o.includes('"msg":"ctxgate listening"'));
  } finally {
    child.kill('SIGKILL');
  }
  return out
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { level: number; msg: string });
}

/** `ctxgate up`'s banner (workers and gateway on free ports), node started with `nodeArgs`. */
async function upBanner(nodeArgs: string[]): Promise<string> {
  // its own working directory: `up` writes its usage ledger (ctxgate-usage.sqlite) there, so the
  // side-by-side runs share no file and none lands in the checkout
  const cwd = mkdtempSync(join(tmpdir(), 'ctxgate-node-flags-up-'));
  const child = spawn(process.execPath, [...nodeArgs, `${ROOT}bin/ctxgate.js`, 'up', '--port', '0', '--workers', '1'], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, NODE_OPTIONS: '' },
    cwd,
  });
  try {
    // the banner is one write: its last line is in once 'Ctrl-C stops' is
    return await waitForStart(child, (o) => /Ctrl-C stops\n/.test(o));
  } finally {
    child.kill('SIGKILL');
  }
}

/** Promise.all that waits for every start to end, so a failed one leaves no sibling running. */
async function allStarted<T>(starts: Promise<T>[]): Promise<T[]> {
  const settled = await Promise.allSettled(starts);
  for (const s of settled) if (s.status === 'rejected') throw s.reason;
  return settled.map((s) => (s as PromiseFulfilledResult<T>).value);
}

const flagWarnings = (log: { level: number; msg: string }[]) =>
  log.filter((l) => l.level === 40 && l.msg.includes(GATEWAY_NODE_FLAGS[0]));

describe('gateway Node flags', () => {
  it('missingNodeFlags: a flag counts as given on the command line or in NODE_OPTIONS, with any value or spelling', () => {
    expect(missingNodeFlags([], '')).toEqual([...GATEWAY_NODE_FLAGS]);
    expect(missingNodeFlags([...GATEWAY_NODE_FLAGS], '')).toEqual([]);
    expect(missingNodeFlags([], ` --inspect ${GATEWAY_NODE_FLAGS.join(' ')} `)).toEqual([]);
    expect(missingNodeFlags(['--max_semi_space_size=32', '--v8_pool_size=2'], '')).toEqual([]);
    expect(missingNodeFlags(['--max-semi-space-size=32'], '')).toEqual(['--v8-pool-size=0']);
    expect(missingNodeFlags(['--max-old-space-size=4096'], '--max-semi-space')).toEqual([...GATEWAY_NODE_FLAGS]);
  });

  it(
    '`ctxgate serve` without the flags warns at start-up (and runs); with them, on argv or in NODE_OPTIONS, it does not',
    async () => {
      const [bare, onArgv, inNodeOptions] = await allStarted([
        serveStartLog([], ''),
        serveStartLog([...GATEWAY_NODE_FLAGS], ''),
        serveStartLog([], GATEWAY_NODE_FLAGS.join(' ')),
      ]);
      expect(flagWarnings(bare)).toHaveLength(1);
      expect(flagWarnings(bare)[0].msg).toContain(`NODE_OPTIONS='${GATEWAY_NODE_FLAGS.join(' ')}'`);
      expect(flagWarnings(onArgv)).toHaveLength(0);
      expect(flagWarnings(inNodeOptions)).toHaveLength(0);
    },
    START_TEST_TIMEOUT_MS,
  );

  it("the image's ENTRYPOINT starts node with every gateway flag, before the CLI", () => {
    const d = readFileSync(`${ROOT}Dockerfile`, 'utf8');
    const m = /^ENTRYPOINT (\[.*\])$/m.exec(d);
    expect(m).not.toBeNull();
    expect(JSON.parse(m![1])).toEqual(['node', ...GATEWAY_NODE_FLAGS, '/app/bin/ctxgate.js']);
  });

  it("bench overhead's gateway child gets them (and a CPU profile when asked)", () => {
    expect(proxiesNodeArgs()).toEqual([...GATEWAY_NODE_FLAGS]);
    expect(proxiesNodeArgs('/tmp/prof')).toEqual([...GATEWAY_NODE_FLAGS, '--cpu-prof', '--cpu-prof-dir=/tmp/prof']);
    // --gateway-node-flags: a candidate setting after the deployed ones (V8 takes a flag's last value)
    const extra = parseGatewayNodeFlags(' --min-semi-space-size=64  --max-semi-space-size=32 ');
    expect(extra).toEqual(['--min-semi-space-size=64', '--max-semi-space-size=32']);
    expect(proxiesNodeArgs(undefined, extra)).toEqual([...GATEWAY_NODE_FLAGS, ...extra]);
    expect(parseGatewayNodeFlags(undefined)).toEqual([]);
    expect(() => parseGatewayNodeFlags('--trace-gc script.js')).toThrow(/script\.js is not a --flag/);
  });

  it('V8 takes the last of two values of one flag (what --gateway-node-flags relies on)', async () => {
    const [twoLast, sixtyFourLast] = await Promise.all([
      grownNewSpace(['--max-semi-space-size=64', '--max-semi-space-size=2']),
      grownNewSpace(['--max-semi-space-size=2', '--max-semi-space-size=64']),
    ]);
    // 2 MB last: the new space stays within 2 x 2 MB (read 4 MB on Node 20), a quarter of the 16 MB
    // bound, where any larger default or the 64 MB first value would put it (32 / 128 MB)
    expect(twoLast).toBeLessThanOrEqual(16 * MB);
    // 64 MB last: it grows past 32 MB (read 128 MB), where 2 MB would keep it at 4 MB
    expect(sixtyFourLast).toBeGreaterThan(32 * MB);
  });

  it(
    '`ctxgate up` notes the missing flags in its banner, and not when they are given',
    async () => {
      const [bare, flagged] = await allStarted([upBanner([]), upBanner([...GATEWAY_NODE_FLAGS])]);
      expect(bare).toContain('base URL');
      expect(bare).toMatch(new RegExp(`\\n  note .*${GATEWAY_NODE_FLAGS[0]}`));
      expect(flagged).toContain('base URL');
      expect(flagged).not.toContain('  note ');
    },
    START_TEST_TIMEOUT_MS,
  );

  it.runIf(process.platform === 'linux')(
    "bench overhead's Portkey gets the same flags (like for like): its live process's argv",
    async () => {
      expect(portkeyNodeArgs()).toEqual([...GATEWAY_NODE_FLAGS]);
      const pk = await startPortkey('http://127.0.0.1:1', portkeyNodeArgs());
      try {
        const argv = readFileSync(`/proc/${pk.pid}/cmdline`, 'utf8').split('\0');
        expect(argv.slice(1, GATEWAY_NODE_FLAGS.length + 1)).toEqual([...GATEWAY_NODE_FLAGS]);
      } finally {
        await pk.stop();
      }
    },
    60_000,
  );

  it("bench chaos's (and bench hostile's) gateway process gets them, before the CLI", () => {
    const args = gatewayProcArgs('/tmp/c.yaml', ['--cpu-prof']);
    expect(args.slice(0, GATEWAY_NODE_FLAGS.length + 1)).toEqual([...GATEWAY_NODE_FLAGS, '--cpu-prof']);
    expect(args.indexOf('serve')).toBeGreaterThan(GATEWAY_NODE_FLAGS.length);
  });

  it.runIf(process.platform === 'linux')(
    "V8's helper threads are the cores Node sees less one (at least 1) with them, not Node's default 4",
    async () => {
      const helpers = Math.max(availableParallelism() - 1, 1);
      const [four, flagged] = await Promise.all([threadCount(['--v8-pool-size=4']), threadCount(GATEWAY_NODE_FLAGS)]);
      // everything else the two processes start is the same: the difference is the helpers'
      expect(flagged - four).toBe(helpers - 4);
    },
  );

  it('the young generation grows past the default only with them', async () => {
    // Node 20's default is two 16 MB semi-spaces: this workload reads exactly 32 MB without the
    // flags and 128 MB with them. Compared with each other, not with the default's exact size
    // (a bound equal to it has no margin, and the default moves between Node lines): with the
    // flags the new space is at least twice as large.
    const [bare, flagged] = await Promise.all([grownNewSpace([]), grownNewSpace(GATEWAY_NODE_FLAGS)]);
    expect(flagged, `${bare / MB} -> ${flagged / MB} MB`).toBeGreaterThanOrEqual(2 * bare);
    expect(flagged).toBeGreaterThan(32 * MB);
  });
});
