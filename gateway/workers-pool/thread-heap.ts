// The render threads' heap: what each thread keeps resident between big calls.
// Measured (bench chaos's per-thread readings, loadtest/chaos/proc-memory.ts): an idle render
// thread held ~160 MB of V8 heap (qwen3: ~18.5 MB of it live) for as long as it stayed idle:
// - its young generation at 102.4 MB committed: the gateway's --max-semi-space-size=64
//   (node-flags.ts, chosen for the event loop's one-connection p99) applies to every isolate,
//   and loading a tokenizer fills it, so each thread grew it to the maximum at start;
// - ~40-90 MB of garbage: between tasks Piscina parks a thread in Atomics.wait (its default
//   `atomics: 'sync'`), so nothing runs there, V8's memory reducer and GCs included, and what the
//   tokenizer load and the last renders left stayed committed until the next big call.
// So each thread gets Node's own default young generation (RENDER_THREAD_YOUNG_MB: a scavenge on
// a render thread never holds the event loop, the reason for the larger one), and the pool sends
// a lane idle for IDLE_GC_MS a GC job (pool.ts): one full GC of the thread's live heap (~20 MB),
// on the thread, per idle spell; V8, seeing no allocation since, also shrinks its young generation.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** A render thread's young generation (MB): Node 20's default on 64-bit (16 MB semi-spaces x 3). */
export const RENDER_THREAD_YOUNG_MB = 48;
/** A lane with no job for this long has its thread collect its garbage (longer than V8's 5 s
 *  allocation-rate window, so that GC also gives back the young generation). */
export const IDLE_GC_MS = 10_000;

/**
 * Main side, before the pool starts threads: V8 sizes a new isolate's young generation from
 * --max-semi-space-size when it is set, over the Worker's resourceLimits. The main isolate read the
 * flag at start-up (its size is kept); cleared now, the threads started from here on take
 * RENDER_THREAD_YOUNG_MB. Idempotent; a process started without the flag is unchanged by it.
 */
export function threadsTakeOwnYoungGeneration(): void {
  setFlagsFromString('--max-semi-space-size=0');
}

/** The job that has a thread collect its garbage (not a render or count job). */
export interface GcJob {
  gc: true;
}

export const GC_JOB: GcJob = { gc: true };

export const isGcJob = (job: object): job is GcJob => 'gc' in job;

let gcFn: (() => void) | undefined | null = null;
let gcs = 0;

/** Thread side: a full GC of this isolate (V8's gc extension, exposed for it when not already). */
export function collectGarbage(): void {
  if (gcFn === null) {
    gcFn = (globalThis as { gc?: () => void }).gc;
    if (!gcFn)
      try {
        // V8 flags are process-wide: --expose-gc gives gc() to contexts made from now on.
        setFlagsFromString('--expose-gc');
        gcFn = runInNewContext('gc') as () => void;
      } catch {
        gcFn = undefined;
      }
  }
  if (!gcFn) return;
  gcFn();
  gcs++;
}

/** Thread side: GC jobs this thread ran. */
export const threadGcs = (): number => gcs;
