// ctxgate in its own process for `bench chaos`, so its RSS and open sockets are its own: read
// from /proc/PID/status (VmRSS) and /proc/PID/fd (links to 'socket:[…]'), no lsof needed.
// Started as deployed (gateway/node-flags.ts: the image's ENTRYPOINT flags, as `bench overhead`'s
// gateway child), plus --expose-gc; SIGUSR2 asks it for a full GC before a memory reading.
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { GATEWAY_NODE_FLAGS } from '../../gateway/node-flags.ts';

const BIN = new URL('../../bin/ctxgate.js', import.meta.url).pathname;
/** A bound for a hang: tsx compiling the gateway and loading its tokenizer on a loaded machine
 *  (load 20+ on 2 cores) took over 60 s. */
const START_TIMEOUT_MS = 180_000;

export interface GatewayProc {
  url: string;
  pid: number;
  rssMb(): number;
  sockets(): number;
  gc(): void;
  /** A full GC, then the gateway's own `process.memoryUsage()` (MB) it logs after it (undefined
   *  when no line came within MEMORY_WAIT_MS: never a stale reading). */
  gcMemory(): Promise<MemoryMb | undefined>;
  /** A V8 heap snapshot written into `dir` (the process must have been started with
   *  `heapSnapshotDir`); resolves with its path once the process answers again (it blocks while
   *  writing), or undefined when none appeared within SNAPSHOT_WAIT_MS. */
  heapSnapshot(): Promise<string | undefined>;
  /** SIGTERM, then wait for exit; returns the exit code. */
  stop(): Promise<number | null>;
  /** Settles when the process has exited (however it was ended): its files and locks are released. */
  exited: Promise<number | null>;
  /** Lines the gateway logged at warn/error (capped), for the report. */
  errors: string[];
}

const MAX_ERROR_LINES = 50;

/** The gateway did not start: it exited, or it was killed after the start timeout. Either way
 *  it has exited by the time this is thrown. */
export class GatewayStartError extends Error {
  constructor(
    message: string,
    readonly pid: number | undefined,
  ) {
    super(message);
  }
}
/** How long a memory reading may take to come back on a loaded machine. */
const MEMORY_WAIT_MS = 10_000;

export interface MemoryMb {
  rss: number;
  heapUsed: number;
  heapTotal: number;
  external: number;
  arrayBuffers: number;
  /** The young generation's committed size (V8's new_space), when the gateway logs its spaces. */
  newSpace?: number;
  /** Each V8 space's size as V8 reports it (getHeapSpaceStatistics' space_size: old_space,
   *  code_space, large_object_space, …; new_space its capacity), when logged: which space a
   *  heapTotal change is in. */
  spaces?: Record<string, number>;
}

/** A heap snapshot of a few hundred MB on a loaded machine takes tens of seconds. */
const SNAPSHOT_WAIT_MS = 180_000;
/** SIGUSR2 is the GC signal; Node's inspector default (SIGUSR1) is taken over by the flag. */
const SNAPSHOT_SIGNAL = 'SIGUSR1';

/** The gateway process's argv after node: the deployed flags first, then the caller's. */
export function gatewayProcArgs(configPath: string, nodeArgs: string[] = [], heapSnapshotDir?: string): string[] {
  const snapshotArgs = heapSnapshotDir
    ? [`--heapsnapshot-signal=${SNAPSHOT_SIGNAL}`, `--diagnostic-dir=${heapSnapshotDir}`]
    : [];
  return [...GATEWAY_NODE_FLAGS, ...nodeArgs, ...snapshotArgs, '--expose-gc', BIN, 'serve', '--config', configPath];
}

/** `nodeArgs`: extra Node flags for the gateway process (e.g. --cpu-prof). `heapSnapshotDir`:
 *  where heapSnapshot() writes (the gateway gets --heapsnapshot-signal). `startTimeoutMs`: how
 *  long it may take to listen; past it the process is killed and the start fails (GatewayStartError). `env`: variables
 *  set for the gateway alone, over this process's (an allocator setting: LD_PRELOAD, MALLOC_*). A snapshot holds the
 *  gateway's whole heap unredacted (prompts, keys, session states): Node writes it 0600, and
 *  heapSnapshot() makes sure of it before handing the file on. */
export async function startGatewayProc(
  configPath: string,
  nodeArgs: string[] = [],
  heapSnapshotDir?: string,
  startTimeoutMs: number = START_TIMEOUT_MS,
  env: Readonly<Record<string, string>> = {},
): Promise<GatewayProc> {
  const args = gatewayProcArgs(configPath, nodeArgs, heapSnapshotDir);
  const proc: ChildProcess = spawn(process.execPath, args, {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env },
  });
  const errors: string[] = [];
  let onMemory: ((m: MemoryMb) => void) | undefined;
  const exit = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  const url = await new Promise<string>((resolve, reject) => {
    let buf = '';
    // No start in time: the process is killed and the promise settles once it has exited, so a
    // failed start never leaves a gateway running behind the bench (nobody else holds its pid).
    let timedOut = false;
    const t = setTimeout(() => {
      timedOut = true;
      proc.kill('SIGKILL');
    }, startTimeoutMs);
    proc.stdout!.on('data', (d: Buffer) => {
      buf += d.toString();
      let nl: number;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        const m = /"url":"(http:[^"]+)"/.exec(line);
        if (m) {
          clearTimeout(t);
          resolve(m[1]);
        }
        const mem = /"memory":(\{[^}]*\})/.exec(line);
        if (mem) {
          const sp = /"spaces":(\{[^}]*\})/.exec(line);
          const spaces = sp ? (JSON.parse(sp[1]) as Record<string, number>) : undefined;
          onMemory?.({
            ...toMb(JSON.parse(mem[1]) as Record<keyof MemoryMb, number>),
            ...(spaces?.new_space === undefined ? {} : { newSpace: spaces.new_space }),
            ...(spaces ? { spaces } : {}),
          });
        }
        // pino levels: 40 warn, 50 error
        if (/"level":(40|50|60)/.test(line) && errors.length < MAX_ERROR_LINES) errors.push(line.slice(0, 400));
      }
    });
    proc.stderr!.on('data', (d: Buffer) => {
      if (errors.length < MAX_ERROR_LINES) errors.push(d.toString().slice(0, 400));
    });
    proc.once('exit', (code) => {
      clearTimeout(t);
      const why = timedOut
        ? `did not start within ${startTimeoutMs} ms: killed`
        : `exited during start (${code}): ${errors.join('\n')}`;
      reject(new GatewayStartError(`gateway pid ${proc.pid} ${why}`, proc.pid));
    });
  });
  const pid = proc.pid!;
  const gcMemoryOnce = (): Promise<MemoryMb | undefined> =>
    new Promise<MemoryMb | undefined>((resolve) => {
      const t = setTimeout(() => done(undefined), MEMORY_WAIT_MS);
      const done = (m: MemoryMb | undefined): void => {
        clearTimeout(t);
        onMemory = undefined;
        resolve(m);
      };
      onMemory = done;
      proc.kill('SIGUSR2');
    });
  return {
    url,
    pid,
    errors,
    exited: exit,
    rssMb: () => {
      const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
      return m ? Number(m[1]) / 1024 : NaN;
    },
    sockets: () => {
      let n = 0;
      for (const fd of readdirSync(`/proc/${pid}/fd`)) {
        try {
          if (readlinkSync(`/proc/${pid}/fd/${fd}`).startsWith('socket:')) n++;
        } catch {
          // the fd closed between readdir and readlink
        }
      }
      return n;
    },
    gc: () => void proc.kill('SIGUSR2'),
    gcMemory: () => gcMemoryOnce(),
    heapSnapshot: async () => {
      if (!heapSnapshotDir) throw new Error('the gateway was started without a heap snapshot dir');
      const before = new Set(snapshotFiles(heapSnapshotDir));
      proc.kill(SNAPSHOT_SIGNAL);
      const end = Date.now() + SNAPSHOT_WAIT_MS;
      while (Date.now() < end) {
        // The snapshot is written synchronously: a GC line back means the file is complete.
        if ((await gcMemoryOnce()) !== undefined) {
          const fresh = snapshotFiles(heapSnapshotDir).find((f) => !before.has(f));
          if (fresh) {
            const file = join(heapSnapshotDir, fresh);
            chmodSync(file, 0o600); // Node's own mode today; kept so whatever writes it
            return file;
          }
        }
      }
      return undefined;
    },
    stop: async () => {
      proc.kill('SIGTERM');
      return exit;
    },
  };
}

function snapshotFiles(dir: string): string[] {
  return readdirSync(dir).filter((f) => f.endsWith('.heapsnapshot'));
}

function toMb(m: Record<keyof MemoryMb, number>): MemoryMb {
  const mb = (b: number): number => Number((b / 2 ** 20).toFixed(1));
  return {
    rss: mb(m.rss),
    heapUsed: mb(m.heapUsed),
    heapTotal: mb(m.heapTotal),
    external: mb(m.external),
    arrayBuffers: mb(m.arrayBuffers),
  };
}
