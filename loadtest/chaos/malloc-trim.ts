// bench chaos --trim-probe: after the end reading, ask the gateway's glibc to give back the free
// memory it keeps (malloc_trim(0), called in the process through gdb: nothing native ships with
// ctxgate), then read the mappings again. What the main malloc heap (brk) loses then was free
// memory glibc kept resident (fragmentation, a high-water mark), not memory the gateway still
// holds; what stays is live. Linux with gdb only (Debian: apt-get install gdb); ptrace must be
// allowed (root, or kernel.yama.ptrace_scope 0). The probe changes the process it reads, so it
// runs after the last reading that counts. Before the trim it reads glibc's own account
// (mallinfo2, glibc 2.33+): bytes in use, bytes free, and of those the main arena's top chunk, the
// only free memory glibc gives back by itself (when the top exceeds M_TRIM_THRESHOLD, which glibc
// raises with each big chunk freed, up to 64 MiB); free memory below the top (holes between live
// chunks) only malloc_trim gives back. So the split says whether a trim threshold could help or
// only less fragmentation would. O(1) calls; gdb's start dominates (seconds).
import { execFile } from 'node:child_process';

/** A loaded machine starts gdb and reads node's symbols slowly. */
const GDB_TIMEOUT_MS = 120_000;

/** glibc's malloc account before the trim, MB (mallinfo2: every arena; `top` the main arena's). */
export interface MallocAccount {
  /** Allocated and not freed (uordblks). */
  inUse: number;
  /** Free in the arenas, the top chunks included (fordblks). */
  free: number;
  /** Free chunks it is in (ordblks, the tops included; fastbin chunks not counted): many for a
   *  little means small holes that a bigger request cannot use. */
  freeChunks: number;
  /** The main arena's top chunk (keepcost): free memory a trim threshold would give back. */
  top: number;
  /** Chunks malloc mmapped on their own (hblkhd): outside the arenas, given back on free. */
  mmapped: number;
}

export interface TrimResult {
  ok: boolean;
  /** malloc_trim's return: 1 if memory was released to the system, 0 if none could be. */
  released?: number;
  /** glibc's account just before the trim (absent where gdb could not read mallinfo2). */
  before?: MallocAccount;
  /** Why the probe could not run (no gdb, ptrace refused, gdb's own error). */
  error?: string;
}

/** malloc_trim(0)'s answer from gdb's batch output (`$1 = 1`), or undefined. */
export function parseTrimOutput(out: string): number | undefined {
  const m = /^\$\d+ = (-?\d+)\s*$/m.exec(out);
  return m ? Number(m[1]) : undefined;
}

const MALLINFO_LINE = 'mallinfo2';

/** The account from the probe's mallinfo2 line (bytes in, MB out), or undefined (none, or nothing
 *  in use: the call failed, as a running process always has something allocated). */
export function parseMallinfoOutput(out: string): MallocAccount | undefined {
  const m = new RegExp(`^${MALLINFO_LINE} (\\d+) (\\d+) (\\d+) (\\d+) (\\d+)\\s*$`, 'm').exec(out);
  if (!m || m[1] === '0') return undefined;
  const mb = (i: number): number => Math.round(Number(m[i]) / 104_857.6) / 10;
  return { inUse: mb(1), free: mb(2), freeChunks: Number(m[5]), top: mb(3), mmapped: mb(4) };
}

/** gdb commands: mallinfo2 into a zeroed struct (no debug info: its sret pointer passed as the first
 *  argument; fields 7, 8, 9, 4, 1 are uordblks, fordblks, keepcost, hblkhd, ordblks; all 0 where the
 *  call failed), printed, freed; then the trim, whose value gdb prints as `$1`. */
const ACCOUNT_COMMANDS = [
  'set $m = (unsigned long *) ((void *(*)(unsigned long, unsigned long)) calloc)(10, 8)',
  'call ((void (*)(unsigned long *)) mallinfo2)($m)',
  `printf "${MALLINFO_LINE} %lu %lu %lu %lu %lu\\n", $m[7], $m[8], $m[9], $m[4], $m[1]`,
  'call ((void (*)(void *)) free)($m)',
];
/** The account's call passes the struct-return pointer as the first argument, which is where x86-64
 *  puts it (rdi); elsewhere (arm64: x8) glibc would write 80 bytes wherever that register points,
 *  inside the probed gateway, so other architectures get the trim alone (review s42 F5). */
export function gdbCommands(arch: string = process.arch): string[] {
  return [...(arch === 'x64' ? ACCOUNT_COMMANDS : []), 'call (int) malloc_trim(0)'];
}

/** Reads glibc's account, then calls malloc_trim(0), inside process `pid` (stops it for the calls,
 *  then detaches). Without mallinfo2 (glibc before 2.33) the trim still runs, with no account. */
export function mallocTrim(pid: number): Promise<TrimResult> {
  return new Promise((resolve) => {
    execFile(
      'gdb',
      ['-p', String(pid), '-batch', '-nx', ...gdbCommands().flatMap((c) => ['-ex', c])],
      { timeout: GDB_TIMEOUT_MS },
      (err, stdout, stderr) => {
        const released = parseTrimOutput(stdout);
        const before = parseMallinfoOutput(stdout);
        if (released !== undefined) resolve({ ok: true, released, ...(before ? { before } : {}) });
        else resolve({ ok: false, error: (err?.message ?? stderr.trim()) || 'gdb printed no result' });
      },
    );
  });
}

/** "in use 120.1, free 44.0 in 5210 chunks (main arena's top 1.2), mmapped alone 3.0" */
export function mallocAccountLine(a: MallocAccount): string {
  return `in use ${a.inUse}, free ${a.free} in ${a.freeChunks} chunks (main arena's top ${a.top}), mmapped alone ${a.mmapped}`;
}
