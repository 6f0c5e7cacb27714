// A redis-server child on a fixed port for `bench chaos --redis`: killed (SIGKILL) and started
// again on the same port to show the gateway serving through a Redis outage.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, createServer } from 'node:net';
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

function reachable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

export class RedisProc {
  private proc?: ChildProcess;
  private readonly dir = mkdtempSync(join(tmpdir(), 'ctxgate-chaos-redis-'));
  constructor(readonly port: number) {}

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    this.proc = spawn(
      'redis-server',
      ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', this.dir],
      { stdio: 'ignore' },
    );
    const end = Date.now() + 10_000;
    while (!(await reachable(this.port))) {
      if (Date.now() > end) throw new Error('redis-server did not start (is it installed?)');
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  async kill(): Promise<void> {
    const p = this.proc;
    if (!p || p.exitCode !== null) return;
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
