// The render pool: worker threads that render and tokenise big calls (middleware/tokens/
// render-tokens.ts) so one tenant's 400k-character prompt never holds the event loop that serves
// every other request, /health included. Small calls stay inline (`min_chars`): they cost less
// than a thread hop.
// - Lanes: one single-thread Piscina per thread. A session goes to the lane its key hashes to, so
//   that thread's id caches stay warm for it; when that lane is busier than the least busy one, the
//   least busy lane takes it (a warm cache is worth less than a wait behind a 400k prompt).
// - Fairness: each lane's queue serves tenants in turn (fair-queue.ts).
// - Bounds: at most `max_queue` jobs wait in all lanes (503 `render_queue_full`), at most
//   `max_per_tenant` of one tenant wait or run (429 `tenant_render_queue_full`); both retry-after 1.
// - Priority: on Linux each thread lowers its own scheduling priority (`nice`, default 10), so on
//   a machine with fewer free cores than threads the event loop still gets the CPU first.
// - Shutdown: close() lets running jobs finish, then ends the threads.
// Cost per job on the event loop: a structured clone of the messages and the previous call's memo,
// one copy of the previous ids into a Uint32Array and one back; O(1) lane choice.
import { availableParallelism } from 'node:os';
import { Piscina } from 'piscina';
import { GatewayError } from '../../middleware/errors.ts';
import type { OffloadJob, OffloadReply, RenderOffload } from '../../middleware/tokens/render-tokens.ts';
import type { GatewayConfig } from '../config/schema.ts';
import { FairTaskQueue, type FairQueueOptions } from './fair-queue.ts';
import type { ThreadData } from './thread-task.ts';

const THREAD = new URL('./thread.mjs', import.meta.url).href;
/** A thread idle this long is ended (Piscina restarts it on the next job; its caches go with it). */
const IDLE_TIMEOUT_MS = 10 * 60_000;
/** How long close() waits for running jobs before ending the threads. */
const CLOSE_TIMEOUT_MS = 10_000;

/** Most threads started by default: each loads its own tokenizer (~150 MB for qwen3). */
export const DEFAULT_MAX_THREADS = 4;

/** Threads when `render_pool.threads` is not set: one core left to the event loop, at most DEFAULT_MAX_THREADS. */
export function defaultThreads(): number {
  return Math.min(DEFAULT_MAX_THREADS, Math.max(1, availableParallelism() - 1));
}

interface Lane {
  pool: Piscina<OffloadJob, OffloadReply>;
  queue: FairTaskQueue;
  /** Jobs queued or running here. */
  pending: number;
}

export interface RenderPool extends RenderOffload {
  readonly threads: number;
  /** Jobs queued or running, all lanes. */
  pending(): number;
  close(): Promise<void>;
}

/** FNV-1a of the affinity key: a stable lane per session. */
function laneOf(key: string, n: number): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  return (h >>> 0) % n;
}

export function createRenderPool(cfg: GatewayConfig['render_pool']): RenderPool | undefined {
  const threads = cfg.threads ?? defaultThreads();
  if (threads === 0) return undefined;
  const lanes: Lane[] = Array.from({ length: threads }, () => {
    const queue = new FairTaskQueue();
    return {
      queue,
      pending: 0,
      pool: new Piscina<OffloadJob, OffloadReply>({
        filename: THREAD,
        // Started on the first big call: a gateway that never sees one never pays for a thread.
        minThreads: 0,
        maxThreads: 1,
        idleTimeout: IDLE_TIMEOUT_MS,
        taskQueue: queue,
        closeTimeout: CLOSE_TIMEOUT_MS,
        workerData: { nice: cfg.nice } satisfies ThreadData,
      }),
    };
  });
  const perTenant = new Map<string, number>();
  let closed = false;

  const pick = (affinity: string): Lane => {
    const home = lanes[laneOf(affinity, lanes.length)];
    let best = home;
    for (const l of lanes) if (l.pending < best.pending) best = l;
    return home.pending <= best.pending ? home : best;
  };

  return {
    threads,
    minChars: cfg.min_chars,
    pending: () => lanes.reduce((n, l) => n + l.pending, 0),
    async run(job, { tenant, affinity }) {
      if (closed) throw new GatewayError('shutting_down', 'the gateway is shutting down');
      const mine = perTenant.get(tenant) ?? 0;
      if (mine >= cfg.max_per_tenant)
        throw new GatewayError(
          'tenant_render_queue_full',
          `this tenant already has ${cfg.max_per_tenant} large prompts being rendered (render_pool.max_per_tenant)`,
          null,
          { 'retry-after': '1' },
        );
      const lane = pick(affinity);
      // One thread per lane: a job that finds its lane busy waits. The bound is on waiting jobs.
      let waiting = 0;
      for (const l of lanes) waiting += Math.max(0, l.pending - 1);
      if (lane.pending > 0 && waiting >= cfg.max_queue)
        throw new GatewayError(
          'render_queue_full',
          `${cfg.max_queue} large prompts are waiting to be rendered (render_pool.max_queue)`,
          null,
          { 'retry-after': '1' },
        );
      perTenant.set(tenant, mine + 1);
      lane.pending++;
      const task = Object.assign(job, {
        [Piscina.queueOptionsSymbol]: { tenant } satisfies FairQueueOptions,
      });
      const prevIds = job.input.prev?.ids;
      try {
        return await lane.pool.run(task, { transferList: prevIds ? [prevIds.buffer as ArrayBuffer] : undefined });
      } finally {
        lane.pending--;
        const left = (perTenant.get(tenant) ?? 1) - 1;
        if (left <= 0) perTenant.delete(tenant);
        else perTenant.set(tenant, left);
      }
    },
    async close() {
      if (closed) return;
      closed = true;
      await Promise.allSettled(lanes.map((l) => l.pool.close()));
    },
  };
}
