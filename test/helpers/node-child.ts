// Runs a child node (outside this process's NODE_OPTIONS, so only the given flags apply) to its exit
// and returns its stdout; a non-zero exit fails the test with the child's stderr.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { expect } from 'vitest';

export async function nodeChildOutput(args: readonly string[]): Promise<string> {
  const child = spawn(process.execPath, args, {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, NODE_OPTIONS: '' },
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => {
    out += d.toString();
  });
  child.stderr.on('data', (d: Buffer) => {
    err += d.toString();
  });
  const [code] = (await once(child, 'close')) as [number | null];
  expect(code, err).toBe(0);
  return out;
}
