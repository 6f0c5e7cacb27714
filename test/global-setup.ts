// Starts one real redis-server for the whole test run (tests that need Redis read
// REDIS_URL via inject('redisUrl')). Without a redis-server binary the value is '' and
// Redis tests must fail loudly rather than skip: CI installs it (.ci/run).
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    redisUrl: string;
    redisPort: number;
  }
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

let child: ChildProcess | undefined;
let dir: string | undefined;

export async function setup(project: TestProject): Promise<void> {
  const port = await freePort();
  dir = mkdtempSync(join(tmpdir(), 'ctxgate-redis-'));
  child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir],
    {
      stdio: 'ignore',
    },
  );
  const started = await new Promise<boolean>((resolve) => {
    child!.once('error', () => resolve(false));
    const deadline = Date.now() + 5000;
    const tick = (): void => {
      const s = require_net_connect(port);
      s.then((ok) => (ok ? resolve(true) : Date.now() > deadline ? resolve(false) : setTimeout(tick, 50)));
    };
    tick();
  });
  project.provide('redisUrl', started ? `redis://127.0.0.1:${port}` : '');
  project.provide('redisPort', started ? port : 0);
}

function require_net_connect(port: number): Promise<boolean> {
  return import('node:net').then(
    ({ connect }) =>
      new Promise<boolean>((resolve) => {
        const s = connect(port, '127.0.0.1');
        s.once('connect', () => {
          s.destroy();
          resolve(true);
        });
        s.once('error', () => resolve(false));
      }),
  );
}

export async function teardown(): Promise<void> {
  child?.kill('SIGTERM');
  if (dir) rmSync(dir, { recursive: true, force: true });
}
