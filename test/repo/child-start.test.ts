// test/helpers/child-start.ts: a child is failed for hanging by what it does (exits, stops using
// CPU, burns far more CPU than a start needs), never for starting slowly.
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { processCpuSeconds, type StartWatch, threadDemandNs, waitForStart } from '../helpers/child-start.ts';

const node = (script: string) =>
  spawn(process.execPath, ['-e', script], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, NODE_OPTIONS: '' },
  });

/** Small bounds so the hung children are found in seconds; a wall bound far beyond any case. */
const WATCH: StartWatch = { idleMs: 3_000, cpuBoundS: 2, wallBoundMs: 120_000 };
const READY = (o: string) => o.includes('ready\n');

describe('waitForStart', () => {
  it.runIf(process.platform === 'linux')('reads a process CPU time from /proc, and none for a gone pid', () => {
    const before = processCpuSeconds(process.pid);
    const end = process.cpuUsage().user + 200_000;
    while (process.cpuUsage().user < end) {
      // 0.2 s of this thread's CPU
    }
    expect(processCpuSeconds(process.pid)).toBeGreaterThan((before ?? Number.NaN) + 0.1);
    expect(processCpuSeconds(2 ** 22 + 1)).toBeUndefined();
    expect(threadDemandNs(process.pid)?.get(String(process.pid))).toBeGreaterThan(1e8);
    expect(threadDemandNs(2 ** 22 + 1)).toBeUndefined();
  });

  it('a child that works longer than the idle window, printing nothing, is not hung: it gets its start line', async () => {
    // 2.5 s of CPU before the line (about idleMs of wall on a quiet host, many times it on a loaded one), then idles
    const child = node(
      `const end = process.cpuUsage().user + 2.5e6; while (process.cpuUsage().user < end); process.stdout.write('ready\\n'); setTimeout(() => {}, 1e9);`,
    );
    try {
      const out = await waitForStart(child, READY, { ...WATCH, cpuBoundS: 30 });
      expect(out).toBe('ready\n');
    } finally {
      child.kill('SIGKILL');
    }
  });

  it.runIf(process.platform === 'linux')(
    'a child that waits for nothing is hung (idle), timers ticking or not',
    async () => {
      // a 100 ms timer doing 2 ms of work: CPU time grows, and still nothing comes
      const child = node('setInterval(() => { const e = Date.now() + 2; while (Date.now() < e); }, 100);');
      try {
        await expect(waitForStart(child, READY, WATCH)).rejects.toThrow(/hung \(idle: slept 3 s\)/);
      } finally {
        child.kill('SIGKILL');
      }
    },
  );

  it.runIf(process.platform === 'linux')('a child that spins is hung (busy) once past the CPU bound', async () => {
    const child = node('for (;;);');
    try {
      await expect(waitForStart(child, READY, WATCH)).rejects.toThrow(/hung \(busy: over 2 s CPU\)/);
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('a child that exits before its start line fails with its code and output', async () => {
    const child = node(`process.stdout.write('half'); process.stderr.write('boom'); process.exit(3);`);
    await expect(waitForStart(child, READY, WATCH)).rejects.toThrow(/exited \(3\)[\s\S]*halfboom/);
  });
});
