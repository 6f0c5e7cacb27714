// A render pool thread's own memory, for leak checks (`bench chaos`): each thread is a V8 isolate
// of its own, with its own heap and young generation, which the main thread's
// process.memoryUsage() does not count (its rss is the whole process's, heap figures its own).
// The pool sends a memory job to each running thread (pool.ts memory()). The reading runs no GC
// there: it is what the thread holds as it is (garbage included), the memory the process's RSS
// carries. O(heap spaces) on the thread.
import { getHeapSpaceStatistics } from 'node:v8';
import { threadId } from 'node:worker_threads';

/** The job that asks a thread for its memory (not a render or count job). */
export interface MemoryJob {
  memory: true;
}

export const MEMORY_JOB: MemoryJob = { memory: true };

/** A thread's memory in MB (one decimal): its isolate's heap, external and young generation. */
export interface ThreadMemoryMb {
  threadId: number;
  /** Live objects and garbage not yet collected. */
  heapUsed: number;
  heapTotal: number;
  external: number;
  arrayBuffers: number;
  /** The young generation's committed size (V8's new_space). */
  newSpace: number;
  /** GC jobs the thread ran after its lane was idle (thread-heap.ts). */
  idleGcs: number;
}

export const isMemoryJob = (job: object): job is MemoryJob => 'memory' in job;

const mb = (b: number): number => Math.round(b / 2 ** 17) / 10;

/** Thread side: this isolate's memory. */
export function threadMemory(idleGcs = 0): ThreadMemoryMb {
  const m = process.memoryUsage();
  const young = getHeapSpaceStatistics().find((s) => s.space_name === 'new_space');
  return {
    threadId,
    heapUsed: mb(m.heapUsed),
    heapTotal: mb(m.heapTotal),
    external: mb(m.external),
    arrayBuffers: mb(m.arrayBuffers),
    newSpace: mb(young?.space_size ?? 0),
    idleGcs,
  };
}
