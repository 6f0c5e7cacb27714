// A render pool thread's counters reach the main thread's metrics: the fast BPE encodes and native
// template renders of a big call rendered on the pool count in ctxgate_tokenizer_fast_encodes_total
// and ctxgate_native_renders_total (each thread has its own copy of those counters), and a
// fast-path mismatch found on a thread is counted and told to the main thread's listeners (the
// gateway's warning) once, with the tokenizer's name and the text's length.
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { createMetrics } from '../../gateway/metrics.ts';
import { createRenderPool, type RenderPool } from '../../gateway/workers-pool/pool.ts';
import { DEFAULT_HASH_SEED } from '../../kvplanner/block-hash.ts';
import { type FastMismatch, onFastMismatch } from '../../middleware/tokens/hf-handle.ts';
import type { OffloadJob } from '../../middleware/tokens/render-tokens.ts';

const poolCfg = { threads: 1, min_chars: 0, max_queue: 8, max_per_tenant: 8, nice: 0, max_failures_per_tenant: 8 };
const MISMATCHING = new URL('../fixtures/render-pool/mismatch-thread.mjs', import.meta.url).href;

function job(content: string): OffloadJob {
  const messages = [
    { role: 'system' as const, content: 'You are a coding agent.' },
    { role: 'user' as const, content },
  ];
  return {
    tokenizer: 'qwen3',
    input: { messages, hashes: ['h0', 'h1'], rootEnd: 1, stableEnd: 2, render: { contextKey: 'k' } },
    blockSize: 16,
    seed: DEFAULT_HASH_SEED,
  };
}

async function count(registry: Registry, name: string, outcome: string): Promise<number> {
  const m = await registry.getSingleMetric(name)!.get();
  return m.values.find((v) => v.labels.outcome === outcome)?.value ?? 0;
}

let pools: RenderPool[] = [];
afterEach(async () => {
  await Promise.all(pools.map((p) => p.close()));
  pools = [];
});

describe('render pool counters', () => {
  it("a job rendered on a thread counts its fast encodes and native renders in the main thread's metrics", async () => {
    const registry = new Registry();
    createMetrics(registry);
    const pool = createRenderPool(poolCfg)!;
    pools.push(pool);
    const meta = { tenant: 't', affinity: 's' };
    const encoded0 = await count(registry, 'ctxgate_tokenizer_fast_encodes_total', 'encoded');
    const rendered0 = await count(registry, 'ctxgate_native_renders_total', 'rendered');
    // This test's own thread encodes and renders nothing: whatever is counted came from the pool.
    const a = await pool.run(job('def f(x):\n    return x + 1\n'.repeat(40)), meta);
    const b = await pool.run(job('class A:\n    pass\n'.repeat(40)), meta);
    expect(a.ok && b.ok).toBe(true);
    expect(await count(registry, 'ctxgate_tokenizer_fast_encodes_total', 'encoded')).toBeGreaterThan(encoded0);
    // the qwen3 template has a native rendering: at least one per job
    expect(await count(registry, 'ctxgate_native_renders_total', 'rendered')).toBeGreaterThanOrEqual(rendered0 + 2);
  }, 60_000);

  it("a fast-path mismatch on a thread is counted and told to the main thread's listeners once", async () => {
    const registry = new Registry();
    createMetrics(registry);
    const heard: FastMismatch[] = [];
    const stop = onFastMismatch((m) => heard.push(m));
    try {
      const pool = createRenderPool(poolCfg, MISMATCHING)!;
      pools.push(pool);
      const meta = { tenant: 't', affinity: 's' };
      const before = await count(registry, 'ctxgate_tokenizer_fast_encodes_total', 'mismatched');
      const marked = 'FAST-PATH-MISMATCH in a tool output';
      expect((await pool.run(job(marked), meta)).ok).toBe(true);
      expect((await pool.run(job('nothing marked here'), meta)).ok).toBe(true);
      expect(await count(registry, 'ctxgate_tokenizer_fast_encodes_total', 'mismatched')).toBe(before + 1);
      expect(heard).toEqual([{ tokenizer: 'toy-thread', chars: marked.length, reason: 'differs' }]);
    } finally {
      stop();
    }
  }, 60_000);
});
