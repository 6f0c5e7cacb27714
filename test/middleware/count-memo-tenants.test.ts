// The pool-count memo (middleware/perf/count-offload.ts poolCounter) remembers a big text's count
// per tenant: a count one tenant's call brought back is reused by that tenant's later calls, never
// handed to another tenant's (a hash stands for the text there; one tenant must not plant counts
// for another's texts). The pool here is a counter that records its jobs (the thread-side count is
// render-pool-count.test.ts's).
import { describe, expect, it } from 'vitest';
import { type CountJob, OFFLOAD_COUNT_MIN_CHARS, poolCounter } from '../../middleware/perf/count-offload.ts';

describe('poolCounter memo', () => {
  it('reuses a count within a tenant, never across tenants', async () => {
    const jobs: Array<{ tenant: string; texts: number }> = [];
    const pool = {
      count: async (job: CountJob, meta: { tenant: string; affinity: string }) => {
        jobs.push({ tenant: meta.tenant, texts: job.texts.length });
        return { tokens: job.texts.map((t) => Math.ceil(t.length / 4)) };
      },
    };
    const forCall = poolCounter(pool, { tokenizer: 'x' }, OFFLOAD_COUNT_MIN_CHARS);
    const big = 'tool output line\n'.repeat(OFFLOAD_COUNT_MIN_CHARS / 8);
    const small = 'short';
    const inline = (t: string) => t.length;
    expect(await forCall('a', 's1', inline)([big, small])).toEqual([Math.ceil(big.length / 4), 5]);
    // tenant a again: from the memo, no job
    expect(await forCall('a', 's2', inline)([big])).toEqual([Math.ceil(big.length / 4)]);
    // tenant b, the same text: its own job
    expect(await forCall('b', 's3', inline)([big])).toEqual([Math.ceil(big.length / 4)]);
    expect(jobs).toEqual([
      { tenant: 'a', texts: 1 },
      { tenant: 'b', texts: 1 },
    ]);
  });
});
