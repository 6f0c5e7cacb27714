// Where a process's resident memory is, from /proc/<pid>/smaps (Linux): the part V8's own figures
// (process.memoryUsage(), each thread's heap) do not explain shows here by kind of mapping.
// - brk: the `[heap]` mapping, glibc's main malloc arena (the main thread's native allocations).
// - arenas: glibc's other malloc arenas (each thread that mallocs may get one, up to 8 x cores).
//   Each grows in a heap of HEAP_MAX_SIZE = 64 MiB mapped at a multiple of its size: read-write
//   mappings from the boundary on, then its PROT_NONE reserve up to the next boundary (a heap
//   grown whole has none and reads as anon, see arenaAt). Counted only with that whole shape: a plain anonymous mapping that starts
//   on a boundary (V8 pages, malloc's mmapped chunks merged into one mapping, another allocator's
//   extents) is not an arena (it read 112 MB of "arenas" with MALLOC_MMAP_THRESHOLD_=32768).
//   Memory freed inside an arena stays resident until its top is trimmed, so fragmentation there
//   grows RSS with no leak in the program. With another malloc preloaded (jemalloc, tcmalloc,
//   mimalloc) there are no glibc arenas: none is counted. The allocator in use is the one the
//   dynamic linker put before the C library: a library named in the process's LD_PRELOAD (its
//   environment at exec, /proc/<pid>/environ) or in /etc/ld.so.preload, and mapped (a preload the
//   linker could not find is skipped). A library only mapped (a native addon linking jemalloc, a
//   dlopen) does not replace malloc and does not count (`allocator`). Not seen: a malloc linked into
//   the executable itself (node's builds link none).
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
  /** glibc arena heaps counted (0 with another allocator). */
  arenaCount: number;
  /** The malloc in use: a preloaded one (LD_PRELOAD, /etc/ld.so.preload) that is mapped, else the C library's. */
  allocator: Allocator;
  anon: number;
  file: number;
  /** Threads by name (comm), e.g. { node: 1, 'V8 DefaultWorke': 4 }. */
  threads: Record<string, number>;
}

const mb = (kb: number): number => Math.round(kb / 102.4) / 10;

interface Mapping {
  start: bigint;
  end: bigint;
  perms: string;
  path: string;
  rssKb: number;
}

/** Preloaded allocators recognised by their library's file name. */
const ALLOCATORS = ['jemalloc', 'tcmalloc', 'mimalloc'] as const;
export type Allocator = 'libc' | (typeof ALLOCATORS)[number];

const HEAP = BigInt(ARENA_HEAP_BYTES);
const anonRw = (m: Mapping | undefined): boolean => m !== undefined && m.path === '' && m.perms.startsWith('rw');

/** How many mappings from `i` on form one glibc arena heap (0: none starts at `i`): read-write
 * anonymous mappings from a 64 MiB boundary, contiguous, then an anonymous PROT_NONE reserve, the
 * whole ending exactly on the next boundary. A heap grown to the whole 64 MiB has no reserve and
 * reads as anon: by its shape it is one read-write 64 MiB at a boundary, which malloc's mmapped
 * chunks filling a gap between two arena heaps also gave (MALLOC_MMAP_THRESHOLD_=32768). */
function arenaAt(maps: readonly Mapping[], i: number): number {
  const first = maps[i];
  if (!anonRw(first) || first.start % HEAP !== 0n) return 0;
  const limit = first.start + HEAP;
  let j = i;
  while (anonRw(maps[j + 1]) && maps[j + 1].start === maps[j].end && maps[j].end < limit) j++;
  const reserve = maps[j + 1];
  const reserved =
    reserve !== undefined &&
    reserve.path === '' &&
    reserve.perms.startsWith('---') &&
    reserve.start === maps[j].end &&
    reserve.end === limit;
  return reserved ? j - i + 1 : 0;
}

/** The allocator a process runs on: the first of `preloaded` (LD_PRELOAD entries, paths or
 * sonames) that names a known allocator's library and is among the mapped files. */
function allocatorInUse(maps: readonly Mapping[], preloaded: readonly string[]): Allocator {
  for (const entry of preloaded) {
    const base = entry.slice(entry.lastIndexOf('/') + 1);
    const a = ALLOCATORS.find((name) => base.startsWith(`lib${name}`));
    if (a !== undefined && maps.some((m) => m.path.slice(m.path.lastIndexOf('/') + 1).startsWith(`lib${a}`))) return a;
  }
  return 'libc';
}

/** The libraries the dynamic linker preloads into a process: its LD_PRELOAD at exec (entries
 * split by spaces or colons, as ld.so reads them) and /etc/ld.so.preload. An environment that
 * cannot be read (another user's process) contributes nothing. */
export function preloadedLibraries(pid: number): string[] {
  const read = (path: string): string => {
    try {
      return readFileSync(path, 'utf8');
    } catch {
      return '';
    }
  };
  const env = read(`/proc/${pid}/environ`)
    .split('\0')
    .find((v) => v.startsWith('LD_PRELOAD='));
  const fromEnv = env === undefined ? [] : env.slice('LD_PRELOAD='.length).split(/[\s:]+/);
  return [...fromEnv, ...read('/etc/ld.so.preload').split(/\s+/)].filter((e) => e !== '');
}

/** The breakdown of one smaps text (pure: tests feed it text), for a process that preloads
 * `preloaded` (preloadedLibraries). */
export function smapsBreakdown(smaps: string, preloaded: readonly string[] = []): Omit<ProcMemoryMb, 'threads'> {
  const maps: Mapping[] = [];
  for (const line of smaps.split('\n')) {
    const head = /^([0-9a-f]+)-([0-9a-f]+) (\S{4}) \S+ \S+ \d+\s*(.*)$/.exec(line);
    if (head) {
      maps.push({
        start: BigInt(`0x${head[1]}`),
        end: BigInt(`0x${head[2]}`),
        perms: head[3],
        path: head[4].trim(),
        rssKb: 0,
      });
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (rss && maps.length > 0) maps[maps.length - 1].rssKb += Number(rss[1]);
  }
  const allocator = allocatorInUse(maps, preloaded);
  const kb = { brk: 0, arenas: 0, anon: 0, file: 0 };
  let arenaCount = 0;
  for (let i = 0; i < maps.length; i++) {
    const m = maps[i];
    const n = allocator === 'libc' ? arenaAt(maps, i) : 0;
    if (n > 0) {
      arenaCount++;
      for (let k = i; k < i + n; k++) kb.arenas += maps[k].rssKb;
      i += n - 1;
    } else if (m.path === '[heap]') kb.brk += m.rssKb;
    else if (m.path === '' || m.path.startsWith('[')) kb.anon += m.rssKb;
    else kb.file += m.rssKb;
  }
  const total = kb.brk + kb.arenas + kb.anon + kb.file;
  return {
    rss: mb(total),
    brk: mb(kb.brk),
    arenas: mb(kb.arenas),
    arenaCount,
    anon: mb(kb.anon),
    file: mb(kb.file),
    allocator,
  };
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
    const smaps = readFileSync(`/proc/${pid}/smaps`, 'utf8');
    return { ...smapsBreakdown(smaps, preloadedLibraries(pid)), threads: threadNames(pid) };
  } catch {
    return undefined;
  }
}
