// RenderPool.collect(): a full GC in every running render thread (bench chaos's settled memory
// readings, via serve's SIGUSR2 under --expose-gc: a parked thread collects nothing of its own, so
// the garbage of its start-up stayed in the start reading). It starts no thread, and it resolves
// only once each running thread has collected. The fixture's `gc` reports on a channel.
import { BroadcastChannel } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import { createRenderPool, type RenderPool } from '../../gateway/workers-pool/pool.ts';

const PROBE = new URL('../fixtures/render-pool/gc-probe-thread.mjs', import.meta.url).href;

let pool: RenderPool | undefined;
let channel: BroadcastChannel | undefined;
afterEach(async () => {
  await pool?.close();
  channel?.close();
  pool = undefined;
  channel = undefined;
});

describe('render pool collect', () => {
  it('runs gc in each running thread before it resolves, and starts none', async () => {
    const seen: number[] = [];
    channel = new BroadcastChannel('ctxgate-test-render-gc');
    channel.onmessage = (e) => seen.push((e as unknown as { data: { gc: number } }).data.gc);
    pool = createRenderPool(
      { threads: 2, min_chars: 0, max_queue: 8, max_per_tenant: 8, nice: 0, max_failures_per_tenant: 8 },
      PROBE,
    )!;
    await pool.collect();
    expect(pool.workers()).toHaveLength(0);
    await pool.warm([{ model: 'm', field: 'models[0].tokenizer', tokenizer: 'qwen3' }]);
    const threads = pool.workers().map((w) => w.threadId);
    expect(threads).toHaveLength(2);
    await pool.collect();
    // the channel's messages arrive on this thread's loop after the replies: wait for both
    for (let i = 0; i < 200 && seen.length < 2; i++) await new Promise((r) => setTimeout(r, 10));
    expect([...seen].sort()).toEqual([...threads].sort());
    // a collect is not a render: nothing failed, nothing was retried
    expect(pool.retries()).toBe(0);
  });
});
