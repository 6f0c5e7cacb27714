// Waiting for a child process's start line without sizing the wait for a quiet host. A start takes
// as long as the child's share of the CPU allows: on a loaded 2-core machine `ctxgate up` printed
// nothing within 150 s at load ~27 and the test failed, though it was starting, only slowly. So the
// child counts as hung by what it does, not by when: it exits first; it sleeps (no thread on a CPU
// or waiting in the run queue for one) for a total of idleMs: an idle hang, waiting on something
// that never comes, even with timers still ticking (a started gateway's health checks); or it
// spends far more CPU than a start needs (a busy hang). However loaded the host, a starting child
// is running or runnable, so its idle time does not grow with the load. Linux only (/proc
// schedstat); elsewhere a wall-clock bound stands in.
import type { ChildProcessByStdio } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import type { Readable } from 'node:stream';

export interface StartWatch {
  /** Wall ms, in total, with no thread of the child running or runnable after which it is hung (idle). */
  idleMs: number;
  /** Child CPU seconds spent without the start line after which it is hung (busy). */
  cpuBoundS: number;
  /** Where /proc has no CPU figure: the wall-clock bound that stands in. */
  wallBoundMs: number;
}

/** `ctxgate serve` / `up` need ~4 / ~8.5 s of CPU to start (s40, tsx + tokenizer loads), and while
 *  starting some thread of theirs is running or runnable almost throughout (an up also waits for
 *  its first health round): a minute of sleep is far from any start. */
export const START_WATCH: StartWatch = { idleMs: 60_000, cpuBoundS: 90, wallBoundMs: 300_000 };

const POLL_MS = 250;
/** USER_HZ: /proc/<pid>/stat counts CPU in these ticks; 100 on every Linux port Node runs on. */
const CLK_TCK = 100;

/** User + system CPU seconds of a process (all its threads), or undefined where /proc has none. */
export function processCpuSeconds(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // after the command name (which may contain spaces): state is field 3, utime 14, stime 15
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) / CLK_TCK;
  } catch {
    return undefined;
  }
}

/** Per thread of a process: ns it ran plus ns it waited runnable (/proc/<pid>/task/<tid>/schedstat),
 *  or undefined where /proc has none. A thread that waits in the run queue counts: on a loaded host
 *  (or at a low priority, like the render pool's threads) it is starting slowly, not hung. */
export function threadDemandNs(pid: number): Map<string, number> | undefined {
  try {
    const demand = new Map<string, number>();
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        const [run, wait] = readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ');
        demand.set(tid, Number(run) + Number(wait));
      } catch {
        // the thread ended between the listing and the read
      }
    }
    // no thread readable (a kernel without schedstat): no figure, not an idle child
    return demand.size > 0 ? demand : undefined;
  } catch {
    return undefined;
  }
}

/** Resolves with the child's stdout once `started(stdout)` holds; rejects when the child exits
 *  first or is hung by `watch`'s measures (the error says which, with its wall and CPU time). */
export function waitForStart(
  child: ChildProcessByStdio<null, Readable, Readable>,
  started: (stdout: string) => boolean,
  watch: StartWatch = START_WATCH,
): Promise<string> {
  const t0 = Date.now();
  let out = '';
  let err = '';
  let lastPoll = t0;
  let idleMs = 0;
  let lastDemand = new Map<string, number>();
  let done = false;
  return new Promise<string>((resolve, reject) => {
    const finish = (e?: Error): void => {
      if (done) return;
      done = true;
      clearInterval(poll);
      child.stdout.off('data', onOut);
      child.stderr.off('data', onErr);
      child.off('close', onExit);
      if (e) reject(e);
      else resolve(out);
    };
    const state = (cpu: number | undefined): string =>
      `after ${((Date.now() - t0) / 1000).toFixed(1)} s wall${cpu === undefined ? '' : `, ${cpu.toFixed(2)} s CPU`}\n${out}${err}`;
    const onOut = (d: Buffer): void => {
      out += d.toString();
      if (started(out)) finish();
    };
    const onErr = (d: Buffer): void => {
      err += d.toString();
    };
    // 'close': after the child's output is all read, so the error carries it
    const onExit = (code: number | null, signal: string | null): void =>
      finish(new Error(`exited (${code ?? signal}) before its start line, ${state(undefined)}`));
    const poll = setInterval(() => {
      if (child.pid === undefined) return;
      const cpu = processCpuSeconds(child.pid);
      const demand = threadDemandNs(child.pid);
      const now = Date.now();
      if (cpu === undefined || demand === undefined) {
        if (now - t0 > watch.wallBoundMs) finish(new Error(`no start line (wall bound), ${state(cpu)}`));
        return;
      }
      // the busiest thread's time this interval it ran or wanted to; the rest the child slept. The
      // kernel adds a run-queue wait when the thread next gets a CPU, and this process may be kept
      // off the CPU between its reads and its clock: so an interval can read more than its length,
      // and that surplus pays back sleep counted before (no clamp per interval)
      let busiest = 0;
      for (const [tid, ns] of demand) busiest = Math.max(busiest, (ns - (lastDemand.get(tid) ?? 0)) / 1e6);
      idleMs = Math.max(0, idleMs + (now - lastPoll) - busiest);
      lastPoll = now;
      lastDemand = demand;
      const hung =
        idleMs > watch.idleMs
          ? `hung (idle: slept ${watch.idleMs / 1000} s)`
          : cpu > watch.cpuBoundS
            ? `hung (busy: over ${watch.cpuBoundS} s CPU)`
            : undefined;
      // the verdict after this turn's I/O: a start line the child wrote before it went to sleep may
      // still be in the pipe when this process was the one kept off the CPU (timers run first)
      if (hung) setImmediate(() => finish(new Error(`${hung}, ${state(cpu)}`)));
    }, POLL_MS);
    child.stdout.on('data', onOut);
    child.stderr.on('data', onErr);
    child.once('close', onExit);
  });
}
