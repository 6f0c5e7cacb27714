// A redis-server child on a fixed port for `bench chaos --redis`: killed (SIGKILL) and started
// again on the same port to show the gateway serving through a Redis outage. On a unix socket in
// its own folder instead (startRedisProcOnSocket), no other process can take its address between
// a kill and the next start (tests).
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, createServer, type NetConnectOpts } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const a = srv.address();
      srv.close(() => resolve(typeof a === 'object' && a ? a.port : 0));
    });
  });
}

/** The pid of the redis-server answering at `at`, or undefined while nothing answers there. */
function serverPid(at: NetConnectOpts): Promise<number | undefined> {
  return new Promise((resolve) => {
    const s = connect(at);
    let got = '';
    const done = (pid: number | undefined) => {
      s.destroy();
      resolve(pid);
    };
    s.once('connect', () => s.write('INFO server\r\n'));
    s.on('data', (d: Buffer) => {
      got += d.toString();
      const m = /process_id:(\d+)/.exec(got);
      if (m) done(Number(m[1]));
      else if (got.length > 65_536) done(-1); // something else listens there
    });
    s.once('error', () => done(undefined));
    s.once('close', () => done(got ? -1 : undefined));
  });
}

/** The port was taken (by another process) before this redis-server could bind it. */
export class RedisPortTakenError extends Error {}

const START_TIMEOUT_MS = 30_000;

export class RedisProc {
  private proc?: ChildProcess;
  private readonly dir = mkdtempSync(join(tmpdir(), 'ctxgate-chaos-redis-'));
  constructor(
    readonly port: number,
    /** listen on a unix socket in its own folder (no TCP port) */
    private readonly onSocket = false,
  ) {}

  private get socketPath(): string {
    return join(this.dir, 'redis.sock');
  }

  get url(): string {
    return this.onSocket ? this.socketPath : `redis://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    const listen = this.onSocket
      ? ['--port', '0', '--unixsocket', this.socketPath, '--unixsocketperm', '700']
      : ['--port', String(this.port), '--bind', '127.0.0.1'];
    this.proc = spawn('redis-server', [...listen, '--save', '', '--appendonly', 'no', '--dir', this.dir], {
      stdio: 'ignore',
    });
    const proc = this.proc;
    let spawnError: Error | undefined;
    proc.once('error', (err) => {
      spawnError = err;
    });
    const end = Date.now() + START_TIMEOUT_MS;
    // Ours is the server whose pid answers: a free port picked earlier can be taken meanwhile, and
    // then our server exits (bind failed) while another process answers there.
    for (;;) {
      if (spawnError) throw new Error(`redis-server did not start (is it installed?): ${spawnError.message}`);
      if (proc.exitCode !== null || proc.signalCode !== null)
        throw new RedisPortTakenError(`redis-server exited at start (port ${this.port} in use?)`);
      const pid = await serverPid(this.onSocket ? { path: this.socketPath } : { port: this.port, host: '127.0.0.1' });
      if (pid === proc.pid) return;
      if (pid !== undefined) {
        await this.kill();
        throw new RedisPortTakenError(`port ${this.port} is taken by another process`);
      }
      if (Date.now() > end) throw new Error('redis-server did not start (is it installed?)');
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** A server was started and has not exited (it may still be starting). */
  get running(): boolean {
    const p = this.proc;
    return p !== undefined && p.exitCode === null && p.signalCode === null;
  }

  async kill(): Promise<void> {
    const p = this.proc;
    // gone already (an exit code, or the signal that ended it): no 'exit' event will come again
    if (!p || p.exitCode !== null || p.signalCode !== null) return;
    const exited = new Promise((r) => p.once('exit', r));
    p.kill('SIGCONT'); // a stopped (SIGSTOP) server still exits on SIGKILL; CONT keeps it plain
    p.kill('SIGKILL');
    await exited;
  }

  /** SIGSTOP / SIGCONT: a stalled Redis (a fork, a long command, a half-open link) and its end */
  signal(sig: NodeJS.Signals): void {
    if (this.proc && this.proc.exitCode === null) this.proc.kill(sig);
  }

  /** kill, then remove its data folder */
  async dispose(): Promise<void> {
    await this.kill();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** A redis-server on a free port; a port taken between the pick and the bind is picked again. */
export async function startRedisProc(tries = 5): Promise<RedisProc> {
  for (let i = 1; ; i++) {
    const redis = new RedisProc(await freePort());
    try {
      await redis.start();
      return redis;
    } catch (err) {
      await redis.dispose();
      if (!(err instanceof RedisPortTakenError) || i >= tries) throw err;
    }
  }
}

/** A redis-server on a unix socket in its own folder: kill() and start() keep its address. */
export async function startRedisProcOnSocket(): Promise<RedisProc> {
  const redis = new RedisProc(0, true);
  try {
    await redis.start();
    return redis;
  } catch (err) {
    await redis.dispose();
    throw err;
  }
}
