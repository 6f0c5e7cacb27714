// CPU time of a child process (user + system, all its threads) read from /proc/<pid>/stat, so
// `bench overhead` can report each target's CPU per request beside its wall-clock figures: on a
// shared or loaded host, wall clock counts waiting for a core, CPU time does not. Its main
// thread's share (/proc/<pid>/task/<pid>/stat) splits that into the event loop and the rest (V8's
// GC helper threads, libuv's pool, worker threads).
// Linux only (undefined elsewhere); resolution one clock tick (10 ms at the usual 100 Hz), so a
// run's delta is meaningful over hundreds of requests. O(1) per read.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

let ticksPerSecond: number | undefined;

function clockTicks(): number {
  if (ticksPerSecond === undefined) {
    try {
      ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      ticksPerSecond = 100;
    }
  }
  return ticksPerSecond;
}

function statCpuMs(path: string): number | undefined {
  let stat: string;
  try {
    stat = readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
  // Fields after the command name (which may hold spaces) start with the state: utime and stime
  // are fields 14 and 15 of the whole line, 12 and 13 after it.
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(f[11]) + Number(f[12]);
  return Number.isFinite(ticks) ? (ticks * 1000) / clockTicks() : undefined;
}

/** Milliseconds of CPU the process has used so far (all threads, exited ones included), or undefined when it cannot be read. */
export function processCpuMs(pid: number | undefined): number | undefined {
  return pid === undefined ? undefined : statCpuMs(`/proc/${pid}/stat`);
}

/** Milliseconds of CPU the process's main thread (its event loop) has used so far. */
export function mainThreadCpuMs(pid: number | undefined): number | undefined {
  return pid === undefined ? undefined : statCpuMs(`/proc/${pid}/task/${pid}/stat`);
}
