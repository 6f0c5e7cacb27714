// Worked examples of the cost arithmetic (docs/architecture.md, "Cost arithmetic").
import { describe, expect, it } from 'vitest';
import {
  capacity,
  GIB,
  kvBytesPerToken,
  maxPromptForTtft,
  plan,
  prefillFlops,
  prefillSeconds,
} from '../../kvplanner/capacity.ts';
import { run } from '../../cli/commands/plan.ts';
import { gpuPreset, modelPreset, type ModelSpec } from '../../kvplanner/presets.ts';

const L32: ModelSpec = {
  name: 'l32',
  layers: 32,
  hidden: 4096,
  kvHeads: 8,
  headDim: 128,
  attention: 'gqa',
  params: 8e9,
  activeParams: 8e9,
  weightBytes: 2,
  kvBytes: 2,
};
const H100 = gpuPreset('H100-80G');

describe('KV bytes per token', () => {
  it('80 layers × 8 KV heads × 128 dims bf16 = 320 KiB; 128k tokens ≈ 40 GiB', () => {
    const b = kvBytesPerToken(modelPreset('llama-3.1-70b'));
    expect(b).toBe(320 * 1024);
    expect((b * 128 * 1024) / GIB).toBe(40);
  });

  it('per layer: MHA 64×128 = 32 KiB, GQA 8×128 = 4 KiB, MLA 512+64 = 1,152 B', () => {
    expect(kvBytesPerToken({ layers: 1, kvHeads: 64, headDim: 128, kvBytes: 2, attention: 'mha' })).toBe(32 * 1024);
    expect(kvBytesPerToken({ layers: 1, kvHeads: 8, headDim: 128, kvBytes: 2, attention: 'gqa' })).toBe(4 * 1024);
    expect(
      kvBytesPerToken({ layers: 1, kvHeads: 1, headDim: 0, kvBytes: 2, attention: 'mla', mlaLatent: 512, mlaRope: 64 }),
    ).toBe(1152);
    expect(kvBytesPerToken(modelPreset('deepseek-v3'))).toBe(61 * 1152);
  });
});

describe('prefill', () => {
  it('L=32, d=4096: 8k tokens ≈ 141 TFLOP ≈ 285 ms at 989 TFLOP/s × 0.5', () => {
    expect(prefillFlops(8192, L32) / 1e12).toBeCloseTo(140.7, 1);
    expect(prefillSeconds(8192, L32, H100, { mfu: 0.5 }) * 1000).toBeCloseTo(284.6, 0);
  });

  it('64k tokens ≈ 3.1 PFLOP ≈ 6.26 s', () => {
    expect(prefillFlops(65536, L32) / 1e15).toBeCloseTo(3.1, 1);
    expect(prefillSeconds(65536, L32, H100, { mfu: 0.5 })).toBeCloseTo(6.26, 2);
  });

  it('attention dominates beyond M = 6d', () => {
    const at = (m: number): number => 4 * m * m * 32 * 4096 - 24 * m * 32 * 4096 * 4096;
    expect(at(6 * 4096)).toBe(0);
    expect(at(6 * 4096 + 1024)).toBeGreaterThan(0);
  });

  it('cached tokens are not recomputed: a full hit costs nothing, a half hit less than half', () => {
    expect(prefillFlops(8192, L32, 8192)).toBe(0);
    const half = prefillFlops(8192, L32, 4096);
    expect(half).toBeGreaterThan(prefillFlops(4096, L32));
    expect(half).toBeLessThan(prefillFlops(8192, L32));
  });

  it('M* is the largest prompt meeting the target', () => {
    const m = maxPromptForTtft(0.285, L32, H100, 0, { mfu: 0.5 });
    expect(m).toBeGreaterThan(8100);
    expect(m).toBeLessThan(8300);
    expect(prefillSeconds(m + 1, L32, H100)).toBeGreaterThan(0.285);
  });
});

describe('capacity and plan', () => {
  it('tokens that fit after weights at 0.9 memory', () => {
    const c = capacity({ model: modelPreset('llama-3.1-8b'), gpu: H100 });
    const expected = Math.floor((80 * GIB * 0.9 - 8.03e9 * 2) / (128 * 1024));
    expect(c.kvTokens).toBe(expected);
    expect(capacity({ model: modelPreset('llama-3.1-70b'), gpu: H100 }).kvTokens).toBe(0);
  });

  it('sessions per worker and fleet size', () => {
    const p = plan({
      model: modelPreset('llama-3.1-8b'),
      gpu: H100,
      sessionTokens: 32768,
      sessions: 100,
      targetTtftMs: 300,
    });
    expect(p.sessionsPerWorker).toBe(Math.floor(p.capacity.kvTokens / 32768));
    expect(p.fleet!.workers).toBe(Math.ceil(100 / p.sessionsPerWorker));
    expect(p.mStar!.tokens).toBeGreaterThan(p.mStar!.tokensCold);
    expect(p.ttft).toHaveLength(12);
  });

  it('ctxgate plan --json prints the figures', async () => {
    const chunks: string[] = [];
    const orig = process.stdout.write.bind(process.stdout);
    process.stdout.write = ((s: string) => chunks.push(String(s)) > 0) as typeof process.stdout.write;
    try {
      expect(await run(['--model', 'llama-3.1-70b', '--gpu', 'H200-141G', '--json'])).toBe(0);
      expect(
        await run([
          '--layers',
          '80',
          '--kv-heads',
          '8',
          '--head-dim',
          '128',
          '--hidden',
          '8192',
          '--params',
          '70B',
          '--gpu',
          'H100-80G',
          '--gpus',
          '2',
        ]),
      ).toBe(0);
    } finally {
      process.stdout.write = orig;
    }
    const j = JSON.parse(chunks[0]);
    expect(j.capacity.kvBytesPerToken).toBe(327680);
    expect(chunks[1]).toContain('320.0 KiB');
    expect(await run(['--model', 'nope'])).toBe(2);
  });
});
