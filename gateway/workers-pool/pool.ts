// The render pool: worker threads that render and tokenise big calls (middleware/tokens/
// render-tokens.ts) so one tenant's 400k-character prompt never holds the event loop that serves
// every other request, /health included. Small calls stay inline (`min_chars`): they cost less
// than a thread hop.
// - Lanes: one single-thread Piscina per thread. A session goes to the lane its key hashes to, so
//   that thread's id caches stay warm for it; when that lane is busier than the least busy one, the
//   least busy lane takes it (a warm cache is worth less than a wait behind a 400k prompt).
// - Fairness: each lane's queue serves tenants in turn (fair-queue.ts).
// - Bounds: at most `max_queue` jobs wait in all lanes, at most `max_per_tenant` of one tenant wait
//   or run (429 `tenant_render_queue_full`); both retry-after 1. Admission to a full queue is by
//   share: a tenant holding at least two more waiting jobs than the newcomer gives up its newest one
//   (429 to it); only when no tenant does is the newcomer refused (503 `render_queue_full`).
// - Threads start at gateway start: warm() (awaited by startAssembledGateway) starts them and
//   test-renders each model's tokenizer there, rejecting with a ConfigError naming
//   render_pool.threads when a thread cannot (exit 2). An idle thread ends after IDLE_TIMEOUT_MS;
//   the next big call starts it again. A job whose
//   thread dies (out of memory, an exit) or fails runs once more on a fresh thread before the caller
//   sees 422 `render_failed` (the prompt is the cause: SDKs do not retry a 4xx). Such a job's hash
//   (its tenant, tokenizer, template, messages and tools) is remembered, at most
//   MAX_POISON_PER_TENANT per tenant for MAX_POISON_TENANTS tenants: the same job again is refused
//   with 422 `render_failed_before` without a thread. A job is hashed on failure, and before it
//   runs only when its tenant has such hashes (a cost only tenants with a crashing prompt pay).
// - Failure budget: a tenant whose distinct jobs ended or failed threads `max_failures_per_tenant`
//   times in the last FAILURE_WINDOW_MS (a job and its retry count once: at most two threads each)
//   gets 429 `tenant_render_failures` for its big calls until the oldest of those is that old:
//   varying the prompt defeats the poison hashes, not this, so one tenant cannot keep the pool
//   restarting threads (a second each, plus the tokenizer load) for everyone else. A client's
//   retries of one crashing prompt cost nothing, so its tenant's other big prompts still run.
// - Priority: on Linux each thread lowers its own scheduling priority (`nice`, default 10), so on
//   a machine with fewer free cores than threads the event loop still gets the CPU first; it does so
//   after warm()'s jobs, before its first other one (thread-task.ts: nothing is served during start).
// - Count jobs: a stage's big texts to count (middleware/perf/count-offload.ts: the ledger's new tool
//   outputs of OFFLOAD_COUNT_MIN_CHARS or more) go through the same admission, fair queue, retry,
//   poison hashes and failure budget as a render; the call's render job comes after its count
//   job, so a tenant's jobs at once do not grow. A count job that ends its thread twice: 422 render_failed.
// - Counters: each reply carries what its thread counted (fast BPE encodes, native renders,
//   fast-path mismatches; thread-counts.ts), added to the main thread's metrics.
// - Shutdown: close() lets running jobs finish, then ends the threads.
// Cost per job on the event loop: a structured clone of the messages and the previous call's memo,
// one copy of the previous ids into a Uint32Array and one back; O(lanes) lane choice; O(tenants
// waiting) to pick an eviction victim when the queue is full.
import { createHash } from 'node:crypto';
import { availableParallelism } from 'node:os';
import type { Worker } from 'node:worker_threads';
import { Piscina } from 'piscina';
import { GatewayError } from '../../middleware/errors.ts';
import { DEFAULT_BLOCK_SIZE, DEFAULT_HASH_SEED } from '../../kvplanner/block-hash.ts';
import type { CountOffload, CountReply } from '../../middleware/perf/count-offload.ts';
import type { OffloadJob, OffloadReply, RenderOffload } from '../../middleware/tokens/render-tokens.ts';
import { ConfigError } from '../config/load.ts';
import type { GatewayConfig } from '../config/schema.ts';
import { FairTaskQueue, type FairQueueOptions } from './fair-queue.ts';
import { renderThreadLimits } from './thread-heap.ts';
import { addThreadCounts } from './thread-counts.ts';
import {
  isCountJob,
  type ThreadCountReply,
  type ThreadData,
  type ThreadJob,
  type ThreadReply,
  COLLECT_TOKENIZER,
  WAKE_TOKENIZER,
} from './thread-task.ts';

const THREAD = new URL('./thread.mjs', import.meta.url).href;
/** A thread idle this long is ended (Piscina restarts it on the next job; its caches go with it). */
const IDLE_TIMEOUT_MS = 10 * 60_000;
/** How long close() waits for running jobs before ending the threads. */
const CLOSE_TIMEOUT_MS = 10_000;

/** Jobs of one tenant remembered as having failed on a render thread (oldest forgotten first). */
export const MAX_POISON_PER_TENANT = 32;
/** Tenants whose failed jobs are remembered (the one remembered longest is forgotten first). */
const MAX_POISON_TENANTS = 1024;

/** Thread failures of one tenant are counted over this window (render_pool.max_failures_per_tenant). */
export const FAILURE_WINDOW_MS = 60_000;

/** Most threads started by default: each loads its own tokenizer, and holds its own V8 heap (qwen3,
 *  warmed: ~127 MB committed, 32 of it new space, plus ~14 MB external, before the thread collected
 *  its load's garbage (thread-task.ts: process RSS +125-134 MB a thread after warm(), +210 MB
 *  before); after big renders ~147 MB: an idle thread, parked by Piscina in Atomics.wait, runs no GC
 *  to give back what its last job grew. Its young generation is its own, RENDER_THREAD_YOUNG_MB
 *  (thread-heap.ts): with the event loop's --max-semi-space-size it was ~206 MB warmed, ~244 MB after
 *  the same renders). */
export const DEFAULT_MAX_THREADS = 4;

// How the default was chosen (measured on 2 cores with bench overhead's growing sessions, per-thread
// CPU from /proc/<pid>/task/*/stat, variants side by side in one run, every answer compared):
// - The pool is for isolation, not throughput. Incremental calls of a growing session render a few
//   k new characters: far below min_chars, they stay inline and an idle thread costs no CPU (0-4 µs
//   per request on pool threads at 16 connections), only its memory (DEFAULT_MAX_THREADS' comment).
// - Offloading such small calls costs more than it saves: with min_chars 0 every call's messages are
//   cloned to the thread and the reply rebuilt, main-thread CPU per request rose 1.59 → 2.05 ms and
//   the process's 1.90 → 3.41 ms (the thread's own work 1.0 ms), so min_chars stays high.
// - Even a big call costs more CPU on the pool: fresh ~24 k-character prompts at 16 connections,
//   1 thread vs none: main thread 3.75 vs 4.08 ms per request, process 6.17 vs 4.96 ms (the clone,
//   and the thread's own caches). On a saturated 2-core host the pool trades ~20 % of big-call
//   throughput for an event loop that keeps answering while they render.
// - What the thread buys is the event loop's time during a big render (bench hostile: without the
//   pool a small tenant's p99 rose 63× behind a 400k prompt). One thread on 2 cores keeps that; more
//   threads than cores − 1 would compete with the event loop, which serves every request.
// - More cores: each thread is one more big prompt rendered in parallel; the event loop (one core)
//   is then the limit for small calls, so threads beyond DEFAULT_MAX_THREADS add memory, not capacity
//   for typical traffic. A host with many cores runs more replicas sharing one Redis
//   (docs/deployment.md), not more threads.

/** Threads when `render_pool.threads` is not set: one core left to the event loop, at most DEFAULT_MAX_THREADS. */
export function defaultThreads(): number {
  return Math.min(DEFAULT_MAX_THREADS, Math.max(1, availableParallelism() - 1));
}

/** What a thread runs: a render job, or a stage's count job (same queue, limits and retries). */
type PoolJob = ThreadJob;

interface Lane {
  pool: Piscina<PoolJob, ThreadReply | ThreadCountReply>;
  queue: FairTaskQueue;
  /** Jobs queued or running here. */
  pending: number;
}

/** A model whose tokenizer the pool test-renders at start. */
export interface WarmProbe {
  model: string;
  /** The config field that names the tokenizer (for the start-up error). */
  field: string;
  tokenizer: string;
  chatTemplateFile?: string;
}

interface Admitted {
  tenant: string;
  lane: Lane;
  ac: AbortController;
  /** A thread took it (or it found its lane idle): never evicted. */
  started: boolean;
  /** Dropped while waiting: what its caller gets (a full queue's share, or the tenant's failure budget). */
  evicted?: () => GatewayError;
  settled: boolean;
}

const WARM_MESSAGES = [
  { role: 'system' as const, content: 'ctxgate render pool start-up check' },
  { role: 'user' as const, content: 'hello' },
];

/** A full GC in the thread that runs it (thread-task.ts). */
const COLLECT_JOB: OffloadJob = {
  tokenizer: COLLECT_TOKENIZER,
  input: { messages: [], hashes: [], rootEnd: 0, stableEnd: 0, render: { contextKey: 'collect' } },
  blockSize: DEFAULT_BLOCK_SIZE,
  seed: DEFAULT_HASH_SEED,
};

/** A no-op job (thread-task.ts): queued, it makes Piscina start a thread for the jobs waiting. */
const WAKE_JOB: OffloadJob = {
  tokenizer: WAKE_TOKENIZER,
  input: { messages: [], hashes: [], rootEnd: 0, stableEnd: 0, render: { contextKey: 'wake' } },
  blockSize: DEFAULT_BLOCK_SIZE,
  seed: DEFAULT_HASH_SEED,
};

/** A small render + tokenise job: the thread loads the tokenizer and renders a plain conversation
 *  (at the process's priority: a start-up job). */
function warmJob(p: WarmProbe): ThreadJob {
  return {
    startUp: true,
    tokenizer: p.tokenizer,
    chatTemplateFile: p.chatTemplateFile,
    input: {
      messages: WARM_MESSAGES,
      hashes: WARM_MESSAGES.map((_, i) => `warm${i}`),
      rootEnd: 1,
      stableEnd: WARM_MESSAGES.length,
      render: { contextKey: 'warm' },
    },
    blockSize: DEFAULT_BLOCK_SIZE,
    seed: DEFAULT_HASH_SEED,
  };
}

export interface RenderPool extends RenderOffload, CountOffload {
  readonly threads: number;
  /**
   * Starts every thread and test-renders each probe there; rejects with a ConfigError naming
   * render_pool.threads when a thread cannot (start-up then fails with exit 2, not the first big call).
   */
  warm(probes: readonly WarmProbe[]): Promise<void>;
  /** Jobs run a second time after their thread died or failed (since start). */
  retries(): number;
  /** The threads now running (diagnostics; tests end one to see a job survive it). */
  workers(): Worker[];
  /** Jobs queued or running, all lanes. */
  pending(): number;
  /** A full GC in every running thread (a settled memory reading: bench chaos); starts no thread.
   *  Counted in its lane's pending jobs while it runs. Resolves when each has run it. */
  collect(): Promise<void>;
  close(): Promise<void>;
}

/** A thread's reply, its counters added to this thread's metrics on the way (thread-counts.ts). */
function counted<R extends ThreadReply | ThreadCountReply>(reply: R): R {
  if (reply.counts) addThreadCounts(reply.counts);
  return reply;
}

/** FNV-1a of the affinity key: a stable lane per session. */
function laneOf(key: string, n: number): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  return (h >>> 0) % n;
}

/** The tenant's job as far as its rendering goes (what makes it fail again on a fresh thread). */
function jobHash(tenant: string, job: PoolJob): string {
  if (isCountJob(job)) {
    const what = [tenant, job.tokenizer, job.chatTemplateFile ?? '', 'count', job.texts];
    return createHash('sha256').update(JSON.stringify(what)).digest('base64url');
  }
  const { messages, render } = job.input;
  const what = [
    tenant,
    job.tokenizer,
    job.chatTemplateFile ?? '',
    messages,
    render.tools ?? null,
    render.extra ?? null,
  ];
  return createHash('sha256').update(JSON.stringify(what)).digest('base64url');
}

const tooManyFailures = (max: number, retryMs: number): GatewayError =>
  new GatewayError(
    'tenant_render_failures',
    `this tenant's large prompts ended or failed ${max} render threads in the last ${FAILURE_WINDOW_MS / 1000} s (render_pool.max_failures_per_tenant)`,
    null,
    { 'retry-after': String(Math.max(1, Math.ceil(retryMs / 1000))) },
  );

const overShare = (): GatewayError =>
  new GatewayError(
    'tenant_render_queue_full',
    `the render queue is full and this tenant holds more than its share of it (render_pool.max_queue)`,
    null,
    { 'retry-after': '1' },
  );

const renderFailed = (): GatewayError =>
  new GatewayError(
    'render_failed',
    'rendering this prompt ended or failed its render thread twice (a prompt too large or malformed for the tokenizer); do not retry it unchanged',
    null,
  );

const renderFailedBefore = (): GatewayError =>
  new GatewayError(
    'render_failed_before',
    'this prompt ended or failed its render thread on an earlier request (a prompt too large or malformed for the tokenizer); it is refused without rendering',
    null,
  );

/** `threadFile`: the thread's entry (tests pass one that dies on a marked job). */
export function createRenderPool(
  cfg: GatewayConfig['render_pool'],
  threadFile: string | undefined = THREAD,
): RenderPool | undefined {
  const threads = cfg.threads ?? defaultThreads();
  if (threads === 0) return undefined;
  // Not the event loop's --max-semi-space-size: each thread's own young generation (thread-heap.ts).
  const resourceLimits = renderThreadLimits();
  const lanes: Lane[] = Array.from({ length: threads }, () => {
    const queue = new FairTaskQueue();
    return {
      queue,
      pending: 0,
      pool: new Piscina<PoolJob, ThreadReply | ThreadCountReply>({
        filename: threadFile ?? THREAD,
        // Started by warm() at start; after an idle timeout, on the next big call.
        minThreads: 0,
        maxThreads: 1,
        idleTimeout: IDLE_TIMEOUT_MS,
        taskQueue: queue,
        closeTimeout: CLOSE_TIMEOUT_MS,
        workerData: { nice: cfg.nice } satisfies ThreadData,
        resourceLimits,
      }),
    };
  });
  const perTenant = new Map<string, number>();
  let retries = 0;
  /** Per tenant: hashes of jobs that failed on a thread (jobHash), oldest first; refused from then on. */
  const poisoned = new Map<string, Set<string>>();
  const poison = (tenant: string, h: string): void => {
    let set = poisoned.get(tenant);
    if (!set) {
      if (poisoned.size >= MAX_POISON_TENANTS) poisoned.delete(poisoned.keys().next().value!);
      set = new Set();
      poisoned.set(tenant, set);
    }
    set.add(h);
    if (set.size > MAX_POISON_PER_TENANT) set.delete(set.values().next().value!);
  };
  const unpoison = (tenant: string, h: string): void => {
    const set = poisoned.get(tenant);
    if (set?.delete(h) && set.size === 0) poisoned.delete(tenant);
  };
  /** Per tenant: when its jobs ended or failed a thread, oldest first, within FAILURE_WINDOW_MS. */
  const failures = new Map<string, number[]>();
  const recentFailures = (tenant: string, now: number): number[] => {
    const list = failures.get(tenant);
    if (!list) return [];
    while (list.length > 0 && list[0] <= now - FAILURE_WINDOW_MS) list.shift();
    if (list.length === 0) failures.delete(tenant);
    return list;
  };
  /**
   * Piscina replaces a dead thread only when a job is submitted (minThreads 0): the jobs queued
   * behind a job that ended its thread (in this queue or Piscina's own skip queue) would wait
   * forever. A no-op job starts one for them. `lane.pending` still counts the failed job.
   */
  const revive = (lane: Lane): void => {
    if (closed || lane.pending <= 1 || lane.pool.threads.length > 0) return;
    lane.pool.run(WAKE_JOB).catch(() => undefined);
  };

  /** Counts a thread the tenant's job ended or failed; true when its budget is now spent. */
  const failed = (tenant: string): boolean => {
    const now = Date.now();
    const list = recentFailures(tenant, now);
    if (list.length === 0) failures.set(tenant, list);
    list.push(now);
    // Only the newest `max` matter for the budget: the list stays bounded whatever happens.
    if (list.length > cfg.max_failures_per_tenant) list.shift();
    if (list.length < cfg.max_failures_per_tenant) return false;
    // Spent: the tenant's jobs still waiting would take threads down with them; they go now.
    const over = () => tooManyFailures(cfg.max_failures_per_tenant, list[0] + FAILURE_WINDOW_MS - Date.now());
    for (const w of [...(waitingOf.get(tenant) ?? [])]) drop(w, over);
    return true;
  };
  /** Admitted jobs no thread has taken yet, per tenant, oldest first: the ones eviction may drop. */
  const waitingOf = new Map<string, Admitted[]>();
  let closed = false;

  const pick = (affinity: string): Lane => {
    const home = lanes[laneOf(affinity, lanes.length)];
    let best = home;
    for (const l of lanes) if (l.pending < best.pending) best = l;
    return home.pending <= best.pending ? home : best;
  };

  const unwait = (a: Admitted): void => {
    const list = waitingOf.get(a.tenant);
    const i = list ? list.indexOf(a) : -1;
    if (!list || i < 0) return;
    list.splice(i, 1);
    if (list.length === 0) waitingOf.delete(a.tenant);
  };

  /** Gives back what admission took (once: eviction settles a job before its promise does). */
  const settle = (a: Admitted): void => {
    if (a.settled) return;
    a.settled = true;
    unwait(a);
    a.lane.pending--;
    const left = (perTenant.get(a.tenant) ?? 1) - 1;
    if (left <= 0) perTenant.delete(a.tenant);
    else perTenant.set(a.tenant, left);
  };

  /** Takes a waiting job out of its lane's queue (no thread ends: it never started). */
  const drop = (a: Admitted, why: () => GatewayError): void => {
    a.evicted = why;
    settle(a);
    a.ac.abort();
  };

  /**
   * The queue is full: the newest waiting job of the tenant holding the most waiting jobs, when that
   * tenant holds at least two more than `tenant` does (so the shares converge to equal, and a tenant
   * never evicts itself).
   */
  const victimFor = (tenant: string): Admitted | undefined => {
    const mine = waitingOf.get(tenant)?.length ?? 0;
    let most: Admitted[] | undefined;
    for (const [t, list] of waitingOf) if (t !== tenant && list.length > (most?.length ?? 0)) most = list;
    return most && most.length > mine + 1 ? most[most.length - 1] : undefined;
  };

  /** Admits a job (render or count) under the tenant's limits and runs it, retried once on a fresh thread. */
  async function admit<R extends OffloadReply | CountReply>(
    job: PoolJob,
    { tenant, affinity }: { tenant: string; affinity: string },
  ): Promise<R> {
    if (closed) throw new GatewayError('shutting_down', 'the gateway is shutting down');
    // Hashed up front only for a tenant with a known crashing prompt; otherwise on failure.
    let h = poisoned.has(tenant) ? jobHash(tenant, job) : undefined;
    if (h !== undefined && poisoned.get(tenant)!.has(h)) throw renderFailedBefore();
    const now = Date.now();
    const recent = recentFailures(tenant, now);
    if (recent.length >= cfg.max_failures_per_tenant)
      throw tooManyFailures(cfg.max_failures_per_tenant, recent[0] + FAILURE_WINDOW_MS - now);
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
    if (lane.pending > 0 && waiting >= cfg.max_queue) {
      // Full: admission is by share, not by arrival. A tenant that filled the queue gives up its
      // newest waiting job (429 to it) so that another tenant's first big prompt gets in.
      const victim = victimFor(tenant);
      if (!victim)
        throw new GatewayError(
          'render_queue_full',
          `${cfg.max_queue} large prompts are waiting to be rendered (render_pool.max_queue)`,
          null,
          { 'retry-after': '1' },
        );
      drop(victim, overShare);
    }
    const a: Admitted = {
      tenant,
      lane,
      ac: new AbortController(),
      started: lane.pending === 0,
      settled: false,
    };
    perTenant.set(tenant, mine + 1);
    lane.pending++;
    if (!a.started) waitingOf.set(tenant, [...(waitingOf.get(tenant) ?? []), a]);
    const onStart = (): void => {
      a.started = true;
      unwait(a);
    };
    const task = Object.assign(job, {
      [Piscina.queueOptionsSymbol]: { tenant, onStart } satisfies FairQueueOptions,
    });
    // The previous ids are cloned, not transferred: a retry sends the same job again.
    const attempt = () => lane.pool.run(task, { signal: a.ac.signal }).then((r) => counted(r) as R);
    try {
      try {
        return await attempt();
      } catch (err) {
        if (a.evicted) throw a.evicted();
        if (closed || err instanceof GatewayError) throw err;
        const spent = failed(tenant);
        revive(lane);
        // The thread died (out of memory, exit) or failed to load its tokenizer: Piscina starts a
        // fresh one; the job runs once more there before the caller sees an error, unless the
        // tenant's failure budget is spent. Remembered, the same job never takes a thread again.
        h ??= jobHash(tenant, job);
        poison(tenant, h);
        if (spent) throw renderFailed();
        retries++;
        let reply: R;
        try {
          reply = await attempt();
        } catch (again) {
          if (closed || again instanceof GatewayError) throw again;
          // Not counted again: the budget counts distinct prompts (this one is remembered).
          revive(lane);
          throw renderFailed();
        }
        unpoison(tenant, h);
        return reply;
      }
    } finally {
      settle(a);
    }
  }

  return {
    threads,
    minChars: cfg.min_chars,
    pending: () => lanes.reduce((n, l) => n + l.pending, 0),
    run: (job, meta) => admit<OffloadReply>(job, meta),
    count: (job, meta) => admit<CountReply>(job, meta),
    retries: () => retries,
    workers: () => lanes.flatMap((l) => l.pool.threads),
    async collect() {
      const running = lanes.filter((l) => !closed && l.pool.threads.length > 0);
      await Promise.allSettled(
        running.map((l) => {
          // The lane's work while it runs: a big call admitted meanwhile waits behind it (so it is
          // not `started`, and pick() prefers an idle lane), as behind any other job.
          l.pending++;
          return l.pool.run(COLLECT_JOB).finally(() => {
            l.pending--;
          });
        }),
      );
    },
    async warm(probes) {
      await Promise.all(
        lanes.map(async (lane, i) => {
          for (const p of probes) {
            let reply: OffloadReply | undefined;
            let error = '';
            try {
              reply = counted((await lane.pool.run(warmJob(p))) as ThreadReply);
            } catch (err) {
              error = (err as Error).message;
            }
            if (reply?.ok && reply.ids.length > 0) continue;
            if (reply && !reply.ok) error = reply.error;
            throw new ConfigError(
              'render_pool.threads',
              `config: invalid config at render_pool.threads: render pool thread ${i} cannot render for model '${p.model}' (${p.field}): ${error || 'no tokens'}; render_pool.threads: 0 renders on the event loop instead`,
            );
          }
        }),
      );
    },
    async close() {
      if (closed) return;
      closed = true;
      await Promise.allSettled(lanes.map((l) => l.pool.close()));
    },
  };
}
