// The worker fleet of `bench chaos`: N reference workers, each a child process on a fixed port
// (first bound on an ephemeral one, then reused), so a kill -9 and restart looks to the gateway
// exactly like an engine crash and recovery: refused connections, then the same URL back.
import { fork, type ChildProcess } from 'node:child_process';
import type { FaultConfig } from '../sim-worker/faults.ts';

const CHILD = new URL('./worker-child.ts', import.meta.url).pathname;
/** A worker that has not said 'ready' by then failed to start. */
const START_TIMEOUT_MS = 60_000;

export interface FleetOptions {
  model: string;
  tokenizer: string;
  timeScale: number;
  /** Each worker's max_model_len (the reference worker's default when unset). */
  maxModelLen?: number;
}

interface Slot {
  port: number;
  proc?: ChildProcess;
}

export class ChaosFleet {
  private readonly slots: Slot[] = [];
  constructor(private readonly o: FleetOptions) {}

  get size(): number {
    return this.slots.length;
  }

  urls(): string[] {
    return this.slots.map((s) => `http://127.0.0.1:${s.port}`);
  }

  async start(n: number): Promise<void> {
    // Sequential: tokenizer loads are CPU-heavy and the ports are learnt one by one.
    for (let i = 0; i < n; i++) {
      const slot: Slot = { port: 0 };
      this.slots.push(slot);
      await this.spawn(slot, i);
    }
  }

  /** Process ids of the running workers. */
  pids(): number[] {
    return this.slots.flatMap((s) => (s.proc?.pid !== undefined ? [s.proc.pid] : []));
  }

  alive(i: number): boolean {
    const p = this.slots[i].proc;
    return !!p && p.exitCode === null && p.signalCode === null;
  }

  /** kill -9: no graceful close; the kernel drops the listener and every connection. */
  kill(i: number): void {
    this.slots[i].proc?.kill('SIGKILL');
  }

  async restart(i: number): Promise<void> {
    const slot = this.slots[i];
    const p = slot.proc;
    if (p && p.exitCode === null && p.signalCode === null) {
      if (!p.killed) return; // still running: nothing to restart
      await new Promise((r) => p.once('exit', r));
    }
    await this.spawn(slot, i);
  }

  setFault(i: number, fault: Partial<FaultConfig>): void {
    const p = this.slots[i].proc;
    if (p && this.alive(i) && p.connected) p.send({ fault });
  }

  async close(): Promise<void> {
    await Promise.all(
      this.slots.map(
        (s) =>
          new Promise<void>((resolve) => {
            const p = s.proc;
            if (!p || p.exitCode !== null || p.signalCode !== null) return resolve();
            p.once('exit', () => resolve());
            p.kill('SIGKILL');
          }),
      ),
    );
  }

  private spawn(slot: Slot, i: number): Promise<void> {
    const args = [
      '--port',
      String(slot.port),
      '--model',
      this.o.model,
      '--tokenizer',
      this.o.tokenizer,
      '--time-scale',
      String(this.o.timeScale),
      '--seed',
      String(i),
      ...(this.o.maxModelLen !== undefined ? ['--max-model-len', String(this.o.maxModelLen)] : []),
    ];
    const proc = fork(CHILD, args, { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
    slot.proc = proc;
    return new Promise<void>((resolve, reject) => {
      const t = setTimeout(
        () => reject(new Error(`worker ${i} did not start in ${START_TIMEOUT_MS} ms`)),
        START_TIMEOUT_MS,
      );
      proc.once('message', (m: { ready?: boolean; port?: number }) => {
        clearTimeout(t);
        if (m.port) slot.port = m.port;
        resolve();
      });
      proc.once('exit', (code, sig) => {
        clearTimeout(t);
        reject(new Error(`worker ${i} exited during start (${code ?? sig})`));
      });
    });
  }
}
