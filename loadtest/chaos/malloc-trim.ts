// bench chaos --trim-probe: after the end reading, ask the gateway's glibc to give back the free
// memory it keeps (malloc_trim(0), called in the process through gdb: nothing native ships with
// ctxgate), then read the mappings again. What the main malloc heap (brk) loses then was free
// memory glibc kept resident (fragmentation, a high-water mark), not memory the gateway still
// holds; what stays is live. Linux with gdb only (Debian: apt-get install gdb); ptrace must be
// allowed (root, or kernel.yama.ptrace_scope 0). The probe changes the process it reads, so it
// runs after the last reading that counts. O(1) calls; gdb's start dominates (seconds).
import { execFile } from 'node:child_process';

/** A loaded machine starts gdb and reads node's symbols slowly. */
const GDB_TIMEOUT_MS = 120_000;

export interface TrimResult {
  ok: boolean;
  /** malloc_trim's return: 1 if memory was released to the system, 0 if none could be. */
  released?: number;
  /** Why the probe could not run (no gdb, ptrace refused, gdb's own error). */
  error?: string;
}

/** malloc_trim(0)'s answer from gdb's batch output (`$1 = 1`), or undefined. */
export function parseTrimOutput(out: string): number | undefined {
  const m = /^\$\d+ = (-?\d+)\s*$/m.exec(out);
  return m ? Number(m[1]) : undefined;
}

/** Calls malloc_trim(0) inside process `pid` (stops it for the call, then detaches). */
export function mallocTrim(pid: number): Promise<TrimResult> {
  return new Promise((resolve) => {
    execFile(
      'gdb',
      ['-p', String(pid), '-batch', '-nx', '-ex', 'call (int) malloc_trim(0)'],
      { timeout: GDB_TIMEOUT_MS },
      (err, stdout, stderr) => {
        const released = parseTrimOutput(stdout);
        if (released !== undefined) resolve({ ok: true, released });
        else resolve({ ok: false, error: (err?.message ?? stderr.trim()) || 'gdb printed no result' });
      },
    );
  });
}
