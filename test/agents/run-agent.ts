// Runs one agent CLI to completion in its own process group, with a hard time limit (the whole
// group is killed, so no agent subprocess outlives the test), stdin closed, output kept.
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface AgentResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  timedOut: boolean;
  stdout: string;
  stderr: string;
  seconds: number;
}

const MAX_OUTPUT_CHARS = 1 << 20;

export function runAgent(
  bin: string,
  args: string[],
  env: Record<string, string>,
  cwd: string,
  timeoutMs: number,
): Promise<AgentResult> {
  const t0 = performance.now();
  return new Promise((resolve) => {
    const child = spawn(bin, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    child.stdout.on('data', (c: Buffer) => void (stdout.length < MAX_OUTPUT_CHARS && (stdout += c.toString('utf8'))));
    child.stderr.on('data', (c: Buffer) => void (stderr.length < MAX_OUTPUT_CHARS && (stderr += c.toString('utf8'))));
    const kill = (sig: NodeJS.Signals): void => {
      try {
        if (child.pid) process.kill(-child.pid, sig);
      } catch {
        /* already gone */
      }
    };
    const timer = setTimeout(() => {
      timedOut = true;
      kill('SIGTERM');
      setTimeout(() => kill('SIGKILL'), 3000).unref();
    }, timeoutMs);
    const finish = (code: number | null, signal: NodeJS.Signals | null): void => {
      clearTimeout(timer);
      // Anything the agent left running in its group (language servers, shells) goes with it.
      kill('SIGKILL');
      resolve({ code, signal, timedOut, stdout, stderr, seconds: (performance.now() - t0) / 1000 });
    };
    child.once('error', (err) => {
      stderr += `\nspawn failed: ${err.message}`;
      finish(null, null);
    });
    child.once('close', finish);
  });
}

/** A small Python project with a failing test: something to read, list and grep. */
export function makeWorkspace(root: string): { home: string; work: string; files: string[] } {
  const home = mkdtempSync(join(root, 'home-'));
  const work = mkdtempSync(join(root, 'work-'));
  mkdirSync(join(work, 'src'));
  const files: Record<string, string> = {
    'README.md': '# calc\n\nA tiny calculator. Run the tests with `python -m pytest -q`.\n',
    'src/__init__.py': '',
    'src/calc.py':
      'def add(a, b):\n    """Return the sum of a and b."""\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n',
    'test_calc.py':
      'from src.calc import add, mul\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n',
  };
  for (const [f, text] of Object.entries(files)) writeFileSync(join(work, f), text);
  return { home, work, files: Object.keys(files).map((f) => join(work, f)) };
}

/** The last `n` lines of a text, for failure messages. */
export function tail(text: string, n = 40): string {
  return text.trimEnd().split('\n').slice(-n).join('\n');
}
