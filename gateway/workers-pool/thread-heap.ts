// The render threads' V8 heap: their young generation is sized for them, not inherited from the
// event loop's flags. What and why:
// - The image starts node with --max-semi-space-size=64 (gateway/node-flags.ts: the event loop's
//   c1 tail). V8 reads that flag whenever an isolate starts (Heap::ConfigureHeap) and lets it
//   override the isolate's own constraints, so each render thread got 64 MB semi-spaces whatever
//   Worker resourceLimits said (measured: maxYoungGenerationSizeMb 12 gave a 128 MB new space under
//   the flag, 8 MB without it). A thread parked between jobs (Piscina's Atomics.wait) runs no GC, so
//   what its last job grew stays resident: a thread warmed on qwen3 held ~206 MB of committed heap
//   (new space 128), and under `bench chaos --redis` the renders after the Redis outage grew the
//   gateway's "other anon" memory by tens of MB that never came back.
// - The main isolate read the flag once, at its start; Node never freezes V8's flags (its
//   v8.setFlagsFromString is public). Setting the semi-space flags back to 0 ("not set") before a
//   thread starts leaves the event loop's young generation as it is and makes every isolate started
//   afterwards take its resourceLimits: the render threads get RENDER_THREAD_YOUNG_MB.
// - RENDER_THREAD_YOUNG_MB = 48: V8's own default for a 64-bit isolate (16 MB semi-spaces, plus the
//   new large object space). The flag's reason does not apply to a render thread: it renders calls
//   of 16 k+ characters (ms to s each), where a scavenge's pause delays no other request.
// The old generation keeps V8's default limit: a thread that runs out of it dies and its job is
// retried once, then refused (pool.ts), a bound the pool already has.
// - --expose-gc for the threads: a thread's tokenizer load leaves its garbage (the vocabulary's
//   JSON text and parse: ~70 MB of RSS for qwen3) and a thread parked by Piscina (Atomics.wait) runs
//   no GC, so it stayed resident until the thread's first big render; the thread collects once
//   after each load (thread-task.ts). V8 installs `gc` in contexts created while the flag is set:
//   every render thread's, not the event loop's (created before; `globalThis.gc` there stays as
//   node's command line made it). The flag stays set so that a thread Piscina starts again (after
//   its idle timeout, a crash) gets it too. Measured (1 qwen3 thread, after warm(), 2026-12-03,
//   load ~5.5): process RSS 349 / 329 MB before that GC, 282 / 260 MB after; the GC 25-44 ms.
// O(1), once per pool.
import { setFlagsFromString } from 'node:v8';
import type { ResourceLimits } from 'node:worker_threads';

/** Young generation of each render thread, MB (Worker resourceLimits.maxYoungGenerationSizeMb). */
export const RENDER_THREAD_YOUNG_MB = 48;

/** The V8 flags that would override a thread's own young generation, set back to "not set", and the
 *  one that gives every context started from now on its `gc` (the threads' start-up collection). */
const THREAD_FLAGS = ['--max-semi-space-size=0', '--min-semi-space-size=0', '--expose-gc'] as const;

/**
 * The resourceLimits for render threads, after making V8 honour them for every isolate started
 * from now on (the event loop's own heap, configured at its start, is unchanged), and giving those
 * isolates `gc`.
 */
export function renderThreadLimits(): ResourceLimits {
  for (const f of THREAD_FLAGS) setFlagsFromString(f);
  return { maxYoungGenerationSizeMb: RENDER_THREAD_YOUNG_MB };
}
