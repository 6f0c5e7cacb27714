// A flushed worker (admin flush_cache) holds nothing: every policy with an index of its own must
// stop predicting hits there. Each policy routes a prompt, predicts it cached on that worker next
// time, forgets the worker, and predicts nothing.
import { describe, expect, it } from 'vitest';
import { createPolicy } from '../../kvplanner/policy-registry.ts';
import { info, tokens, workers } from './fixtures.ts';

const WITH_INDEX = ['ctxgate', 'dynamo_kv', 'llmd_precise', 'sglang_cache_aware', 'smg_cache_aware'];

describe('forgetWorker', () => {
  for (const name of WITH_INDEX)
    it(`${name}: predictions on a forgotten worker start from nothing; the other worker keeps its own`, () => {
      const p = createPolicy(name);
      expect(p.forgetWorker).toBeTypeOf('function');
      const ws = workers(2);
      const prompt = () =>
        info({ sessionId: 's', text: 'the repository handbook '.repeat(40), promptTokenIds: tokens(512, 7, 1000) });
      const routed = (only: number) => {
        const i = prompt();
        const c = p.select([ws[only]], i)!;
        p.observe?.({ workerId: c.worker.id, info: i, ok: true, reportedCachedTokens: c.predictedCachedTokens });
        return c.predictedCachedTokens ?? 0;
      };
      expect(routed(0)).toBe(0);
      expect(routed(1)).toBe(0);
      expect(routed(0)).toBeGreaterThan(0);
      p.forgetWorker!('w0');
      expect(routed(0)).toBe(0);
      expect(routed(1)).toBeGreaterThan(0);
    });
});
