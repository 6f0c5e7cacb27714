// bench chaos's memory readings of the gateway process at rest: RSS, open sockets, the main
// thread's memoryUsage() after a full GC, and RSS by kind of mapping (proc-memory.ts); one line of
// text per reading. O(mappings) per reading, plus the waits it is made of.
import type { GatewayProc, MemoryMb } from './gateway-proc.ts';
import { procMemory, type ProcMemoryMb } from './proc-memory.ts';

/** A reading's default rest before its GC (the warm-up rounds' readings). */
export const SETTLE_MS = 3_000;

export interface Reading {
  rss: number;
  sockets: number;
  memory?: MemoryMb;
  /** RSS by kind of mapping, threads by name (undefined off Linux). */
  proc?: ProcMemoryMb;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * The gateway's memory after `ms` at rest and a full GC. `quietMs` (the two at-rest readings):
 * a first GC, then that long with no load before the GC whose reading counts. V8 gives back its
 * young generation's committed semi-spaces (up to 2 x --max-semi-space-size) only at a GC that
 * sees allocation below ~1 KB/ms over its last ~5 s, or at a memory-reducing GC. A GC right after
 * the rest kept them whenever the run's last seconds of load were still in that window (no GC had
 * fallen in the rest): the s29 end readings' +18-25 % RSS was that (young generation 102.4 MB at
 * the end vs 0.8 at the start, old space +5 MB), no leak. After a GC and quietMs of quiet the
 * window holds only the rest, and the memory reducer that GC armed (8 s timer) has had its turn:
 * a gateway still allocating at rest keeps its young generation and shows it.
 */
export async function settled(gw: GatewayProc, ms = SETTLE_MS, quietMs = 500): Promise<Reading> {
  await sleep(ms);
  gw.gc();
  await sleep(quietMs);
  const memory = await gw.gcMemory();
  await sleep(500);
  return { rss: gw.rssMb(), sockets: gw.sockets(), memory, proc: procMemory(gw.pid) };
}

export function memLine(r: Reading): string {
  const m = r.memory;
  const main = m
    ? `rss ${r.rss.toFixed(1)}, heap ${m.heapUsed}/${m.heapTotal}${m.newSpace === undefined ? '' : ` (young generation ${m.newSpace})`}, external ${m.external}, arrayBuffers ${m.arrayBuffers}`
    : `rss ${r.rss.toFixed(1)}`;
  return main + (r.proc ? `; ${procLine(r.proc)}` : '');
}

/** Resident memory by kind of mapping, and the threads by name. */
export function procLine(p: ProcMemoryMb): string {
  const names = Object.entries(p.threads)
    .map(([n, c]) => `${n} ${c}`)
    .join(', ');
  const arenas =
    p.allocator === 'libc' ? `malloc arenas ${p.arenas} (${p.arenaCount})` : `${p.allocator}: no glibc arenas`;
  return `mappings: brk ${p.brk}, ${arenas}, other anon ${p.anon}, file ${p.file}; threads: ${names}`;
}
