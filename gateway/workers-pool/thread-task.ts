// What a render pool thread runs: the pipeline's own render + tokenise + block-hash job
// (middleware/tokens/render-tokens.ts), or a stage's count job (middleware/perf/count-offload.ts:
// each text's ids counted with the handle's cached encode, as the main thread would), with this
// thread's tokenizer handle, loaded once per tokenizer and template and kept (with its id caches)
// for the thread's life.
import { setPriority } from 'node:os';
import { Piscina } from 'piscina';
import { loadTokenizer } from '../../middleware/tokens/registry.ts';
import { runOffloadJob, type OffloadJob, type OffloadReply } from '../../middleware/tokens/render-tokens.ts';
import type { TokenizerHandle } from '../../middleware/tokens/handle.ts';
import type { CountJob, CountReply } from '../../middleware/perf/count-offload.ts';
import { type ThreadCounts, takeThreadCounts, watchThreadCounts } from './thread-counts.ts';

/** What the pool hands each thread at start. */
export interface ThreadData {
  /** Scheduling niceness for this thread (Linux). */
  nice: number;
}

// On Linux, setpriority(PRIO_PROCESS, 0) applies to the calling thread only: this thread yields the
// CPU to the event loop. Elsewhere it would renice the whole process, so it is not called there.
// Not at the thread's start but once a job that is not a start-up one has its tokenizer loaded: the
// gateway awaits the start-up jobs (pool.warm(): the tokenizer's load and a test render) before it
// listens, and a thread Piscina starts again (after its idle timeout, a crash) loads the tokenizer
// while a caller's big call waits on it; at nice 10 on a busy host that load got a tenth of a core
// (a gateway start went from 25 to 181 s under load). Only rendering runs niced.
const data = Piscina.workerData as ThreadData | undefined;
let reniced = false;
function renice(): void {
  if (reniced) return;
  reniced = true;
  if (process.platform !== 'linux' || !data?.nice) return;
  try {
    setPriority(0, data.nice);
  } catch {
    // not permitted (a sandbox): the thread runs at the process's priority
  }
}

watchThreadCounts();

const handles = new Map<string, Promise<TokenizerHandle>>();

/** A job's reply with what this thread counted since its last one (thread-counts.ts). */
export type ThreadReply = OffloadReply & { counts?: ThreadCounts };
/** A count job's reply, with the same counters. */
export type ThreadCountReply = CountReply & { counts?: ThreadCounts };

/** What a thread runs: a render job, or a stage's count job; `startUp`: one of warm()'s jobs, run
 *  before the gateway listens, at the process's priority (see renice). */
export type ThreadJob = (OffloadJob | CountJob) & { startUp?: true };

/** A count job, not a render job. */
export const isCountJob = (job: OffloadJob | CountJob): job is CountJob => 'texts' in job;

/** The tokenizer name of a no-op job: the pool sends one to make Piscina start a thread again. */
export const WAKE_TOKENIZER = '\u0000wake';

/** The tokenizer name of a collect job: a full GC in this thread (bench chaos's settled memory
 *  readings: a parked thread runs no GC of its own, so what its last job left would sit in the
 *  process's RSS). */
export const COLLECT_TOKENIZER = '\u0000collect';

/** A full GC of this thread's heap: `gc` is there in every render thread (thread-heap.ts). */
const collect = (): void => (globalThis as { gc?: () => void }).gc?.();

export default async function task(job: ThreadJob): Promise<ThreadReply | ThreadCountReply> {
  if (job.tokenizer === COLLECT_TOKENIZER) {
    collect();
    return { ok: false, error: 'collect' };
  }
  if (job.tokenizer === WAKE_TOKENIZER) return { ok: false, error: 'wake' };
  const key = `${job.tokenizer}\u0000${job.chatTemplateFile ?? ''}`;
  let h = handles.get(key);
  const loads = !h;
  if (!h) {
    const loading = loadTokenizer(job.tokenizer, { chatTemplateFile: job.chatTemplateFile });
    handles.set(key, (h = loading));
    // A failed load (a template briefly unreadable, EMFILE) must not stick to this thread: the next
    // job (the pool's retry included) loads again.
    loading.catch(() => {
      if (handles.get(key) === loading) handles.delete(key);
    });
  }
  const tok = await h;
  // The load's garbage (~70 MB of RSS for qwen3) would stay while the thread is parked between
  // jobs (no GC runs there): collected now, once per load, before the job renders (25-44 ms).
  if (loads) collect();
  if (!job.startUp) renice();
  if (isCountJob(job)) {
    // encodeCached, as the main thread's stages count: the same ids, and they stay in this lane's
    // cache for the call's render job.
    const tokens = job.texts.map((t) => tok.encodeCached(t).length);
    return { tokens, counts: takeThreadCounts() };
  }
  const reply: ThreadReply = runOffloadJob(tok, job);
  reply.counts = takeThreadCounts();
  if (!reply.ok) return reply;
  // The ids' buffer goes back without a copy (a Piscina transferable wrapper).
  const movable = { [Piscina.transferableSymbol]: [reply.ids.buffer], [Piscina.valueSymbol]: reply };
  return Piscina.move(movable as never) as unknown as ThreadReply;
}
