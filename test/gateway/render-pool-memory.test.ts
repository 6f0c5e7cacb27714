// The render pool's memory(): each running thread reports its own isolate's heap (not the main
// thread's), as it is (no GC: what RSS carries); a lane whose thread is not running is skipped,
// and asking never starts a thread (a leak check must not add the memory it measures). And a lane
// left idle has its thread collect its garbage (thread-heap.ts: Piscina parks an idle thread, so
// nothing else would): the tokenizer load's garbage is gone from a thread that idled, kept by one
// whose idle GC is not due.
import { threadId } from 'node:worker_threads';
import { afterEach, expect, it } from 'vitest';
import { createRenderPool, type RenderPool } from '../../gateway/workers-pool/pool.ts';
import { RENDER_THREAD_YOUNG_MB } from '../../gateway/workers-pool/thread-heap.ts';
import { isMemoryJob, MEMORY_JOB, threadMemory } from '../../gateway/workers-pool/thread-memory.ts';
import { isCountJob } from '../../gateway/workers-pool/thread-task.ts';

/** An idle GC that is never due within a test. */
const NEVER_MS = 3_600_000;
const poolCfg = { min_chars: 0, max_queue: 8, max_per_tenant: 8, nice: 0, max_failures_per_tenant: 8 };
let pools: RenderPool[] = [];
afterEach(async () => {
  await Promise.all(pools.map((p) => p.close()));
  pools = [];
});

it('asks only running threads, starts none, and each answers for its own isolate', async () => {
  const pool = createRenderPool({ threads: 2, ...poolCfg }, undefined, { idleGcMs: NEVER_MS })!;
  pools.push(pool);
  expect(await pool.memory()).toEqual([]);
  expect(pool.workers()).toHaveLength(0);
  await pool.warm([{ model: 'm', field: 'models[0].tokenizer', tokenizer: 'qwen3' }]);
  const ids = pool.workers().map((w) => w.threadId);
  expect(ids).toHaveLength(2);
  const mem = await pool.memory();
  expect(mem.map((m) => m.threadId).sort()).toEqual([...ids].sort());
  expect(pool.workers()).toHaveLength(2);
  for (const m of mem) {
    expect(m.threadId).not.toBe(threadId);
    // a thread that loaded qwen3 holds its vocabulary: megabytes, within what it committed
    expect(m.heapUsed).toBeGreaterThan(1);
    expect(m.heapUsed).toBeLessThanOrEqual(m.heapTotal);
    expect(m.newSpace).toBeLessThanOrEqual(m.heapTotal);
    expect(m.newSpace).toBeLessThanOrEqual(RENDER_THREAD_YOUNG_MB);
    expect(m.idleGcs).toBe(0);
  }
});

it('an idle lane has its thread collect its garbage; a busy or not-yet-idle one does not', async () => {
  const probe = [{ model: 'm', field: 'models[0].tokenizer', tokenizer: 'qwen3' }];
  const kept = createRenderPool({ threads: 1, ...poolCfg }, undefined, { idleGcMs: NEVER_MS })!;
  const idle = createRenderPool({ threads: 1, ...poolCfg }, undefined, { idleGcMs: 1 })!;
  pools.push(kept, idle);
  await kept.warm(probe);
  await idle.warm(probe);
  const [before] = await kept.memory();
  expect(before.idleGcs).toBe(0);
  let after = (await idle.memory())[0];
  // an event, not a duration: the GC job is queued 1 ms after the lane went idle
  for (let i = 0; i < 600 && after.idleGcs === 0; i++) {
    await new Promise((r) => setTimeout(r, 50));
    after = (await idle.memory())[0];
  }
  expect(after.idleGcs).toBe(1);
  // the same tokenizer load and test render on both: one thread still holds its garbage
  expect(after.heapUsed).toBeLessThan(before.heapUsed);
  // memory() is no job: reading again does not GC again
  expect((await idle.memory())[0].idleGcs).toBe(1);
});

it('a memory job is told apart from render and count jobs', () => {
  expect(isMemoryJob(MEMORY_JOB)).toBe(true);
  expect(isCountJob(MEMORY_JOB as never)).toBe(false);
  expect(isMemoryJob({ tokenizer: 'qwen3', texts: ['a'] })).toBe(false);
  const m = threadMemory();
  expect(m.threadId).toBe(threadId);
  expect(m.heapUsed).toBeGreaterThan(0);
});
