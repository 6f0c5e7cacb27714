// Where a process's resident memory is, from /proc/<pid>/smaps (Linux): the part V8's own figures
// (process.memoryUsage(), each thread's heap) do not explain shows here by kind of mapping.
// - brk: the `[heap]` mapping, glibc's main malloc arena (the main thread's native allocations).
// - arenas: anonymous read-write mappings that start on a 64 MiB boundary: glibc's other malloc
//   arenas (each thread that mallocs may get one, up to 8 x cores; each grows in a heap of at most
//   HEAP_MAX_SIZE = 64 MiB aligned to its size). Memory freed inside them stays resident until the
//   arena's top is trimmed, so fragmentation there grows RSS with no leak in the program.
// - anon: every other anonymous mapping (V8's heap pages of every isolate, malloc's mmapped big
//   chunks, thread stacks).
// - file: file-backed mappings (code, shared libraries, mmapped files).
// Threads by name from /proc/<pid>/task/*/comm (a thread that ended and was replaced shows as a
// changed count only if the count changed). O(mappings) per reading.
import { readdirSync, readFileSync } from 'node:fs';

/** glibc's HEAP_MAX_SIZE on 64-bit (2 x DEFAULT_MMAP_THRESHOLD_MAX): a non-main arena's heap. */
const ARENA_HEAP_BYTES = 64 * 2 ** 20;

export interface ProcMemoryMb {
  rss: number;
  brk: number;
  arenas: number;
  /** Mappings counted as arenas. */
  arenaCount: number;
  anon: number;
  file: number;
  /** Threads by name (comm), e.g. { node: 1, 'V8 DefaultWorke': 4 }. */
  threads: Record<string, number>;
}

const mb = (kb: number): number => Math.round(kb / 102.4) / 10;

/** The breakdown of one smaps text (pure: tests feed it text). */
export function smapsBreakdown(smaps: string): Omit<ProcMemoryMb, 'threads'> {
  const kb = { brk: 0, arenas: 0, anon: 0, file: 0 };
  let arenaCount = 0;
  let kind: keyof typeof kb = 'anon';
  for (const line of smaps.split('\n')) {
    const head = /^([0-9a-f]+)-([0-9a-f]+) (\S{4}) \S+ \S+ \d+\s*(.*)$/.exec(line);
    if (head) {
      const start = BigInt(`0x${head[1]}`);
      const path = head[4].trim();
      if (path === '[heap]') kind = 'brk';
      else if (path === '' && head[3].startsWith('rw') && start % BigInt(ARENA_HEAP_BYTES) === 0n) {
        kind = 'arenas';
        arenaCount++;
      } else if (path === '' || path.startsWith('[')) kind = 'anon';
      else kind = 'file';
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (rss) kb[kind] += Number(rss[1]);
  }
  const total = kb.brk + kb.arenas + kb.anon + kb.file;
  return { rss: mb(total), brk: mb(kb.brk), arenas: mb(kb.arenas), arenaCount, anon: mb(kb.anon), file: mb(kb.file) };
}

/** The process's threads counted by name. */
export function threadNames(pid: number): Record<string, number> {
  const out: Record<string, number> = {};
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const name = readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim();
      out[name] = (out[name] ?? 0) + 1;
    } catch {
      // the thread ended between readdir and read
    }
  }
  return out;
}

/** The process's memory by kind of mapping, and its threads; undefined off Linux or once it exited. */
export function procMemory(pid: number): ProcMemoryMb | undefined {
  try {
    return { ...smapsBreakdown(readFileSync(`/proc/${pid}/smaps`, 'utf8')), threads: threadNames(pid) };
  } catch {
    return undefined;
  }
}
