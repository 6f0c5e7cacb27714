// bench chaos: what an RSS change between two at-rest readings of the gateway is made of, so a
// growth names its kind: the main thread's live JS heap, heap V8 keeps committed but free after a
// full GC (fragmented or not yet released pages: reused before the heap grows again), other
// anonymous memory (the render threads' heaps, thread stacks, malloc's mmapped big chunks), the
// malloc heaps (brk and glibc's arenas: native buffers, and the free memory glibc keeps resident),
// and file mappings. The parts add up to the change in RSS as the mappings read it (smaps).
// With a malloc_trim(0) probe after the end reading: how much of the malloc heaps was free memory
// glibc kept (what trimming gave back), not memory held live. O(1).
import type { MemoryMb } from './gateway-proc.ts';
import type { ProcMemoryMb } from './proc-memory.ts';

/** MB, end minus start. */
export interface RssParts {
  /** Sum of the parts: the change in RSS as the mappings read it. */
  rss: number;
  /** The main thread's JS heap in use after the GC (memoryUsage().heapUsed). */
  heapUsed: number;
  /** Committed to the main thread's JS heap and free after the GC (heapTotal - heapUsed). */
  heapFree: number;
  /** Anonymous mappings besides the main JS heap (render threads' heaps, stacks, mmapped chunks). */
  otherAnon: number;
  /** brk (the main malloc arena) and glibc's other arenas. */
  malloc: number;
  file: number;
  /** With a trim probe: what malloc_trim(0) gave back at the end (free memory glibc kept). */
  mallocFreeKept?: number;
}

export interface PartsReading {
  memory?: MemoryMb;
  proc?: ProcMemoryMb;
}

const r1 = (x: number): number => Math.round(x * 10) / 10;

/** The parts of the RSS change from `start` to `end` (undefined when a reading lacks the V8 figures
 *  or the mappings); `trimmed`: the mappings read after malloc_trim(0) following `end`. */
export function rssParts(start: PartsReading, end: PartsReading, trimmed?: ProcMemoryMb): RssParts | undefined {
  const a = start.memory;
  const b = end.memory;
  const p = start.proc;
  const q = end.proc;
  if (!a || !b || !p || !q) return undefined;
  const malloc = (m: ProcMemoryMb): number => m.brk + m.arenas;
  return {
    rss: r1(q.brk + q.arenas + q.anon + q.file - (p.brk + p.arenas + p.anon + p.file)),
    heapUsed: r1(b.heapUsed - a.heapUsed),
    heapFree: r1(b.heapTotal - b.heapUsed - (a.heapTotal - a.heapUsed)),
    otherAnon: r1(q.anon - b.heapTotal - (p.anon - a.heapTotal)),
    malloc: r1(malloc(q) - malloc(p)),
    file: r1(q.file - p.file),
    ...(trimmed ? { mallocFreeKept: r1(malloc(q) - malloc(trimmed)) } : {}),
  };
}

const signed = (x: number): string => `${x >= 0 ? '+' : ''}${x.toFixed(1)}`;

/** One line: "+26.6 MB = live JS +4.8, JS heap free +14.1, …". */
export function rssPartsLine(d: RssParts): string {
  const kept =
    d.mallocFreeKept === undefined
      ? ''
      : ` (of the malloc heaps at the end, ${d.mallocFreeKept.toFixed(1)} free memory glibc kept)`;
  return (
    `${signed(d.rss)} MB = main JS heap live ${signed(d.heapUsed)}, main JS heap committed but free ${signed(d.heapFree)}, ` +
    `other anon (render threads' heaps, stacks) ${signed(d.otherAnon)}, malloc heaps ${signed(d.malloc)}${kept}, files ${signed(d.file)}`
  );
}
