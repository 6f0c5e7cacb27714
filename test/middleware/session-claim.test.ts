// Derived session ids, as a property over random interleavings of agent runs that send no
// session header: one id per run; runs of different tasks never share one; a parallel run of the
// same task (another first reply) forks at its first turn and then keeps its fork id.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SEED_SUFFIX } from '../../middleware/layout/session-claim.ts';
import { createPipeline } from '../../middleware/pipeline.ts';
import { MemorySessionStore } from '../../middleware/session/memory-store.ts';
import type { ChatRequest, PipelineContext } from '../../middleware/types.ts';
import { buildSession, codeLines, requestsOf } from './helpers/session-gen.ts';

const TASKS = ['Fix the bug in src/app.py.', 'Add a --verbose flag to the CLI.'];
const ctx = (i: number): PipelineContext => ({ tenant: 't1', requestId: `r${i}`, headers: {}, model: 'm' });

function run(tag: string, task: number, calls: number): ChatRequest[] {
  const steps = Array.from({ length: calls }, (_, k) => ({
    thought: `THOUGHT (${tag}): step ${k + 1}.`,
    cmd: `sed -n '1,20p' src/f${k}.py`,
    out: codeLines(`${tag}_${k}`, 20),
  }));
  return requestsOf(buildSession(TASKS[task], steps)).map((messages) => ({ model: 'm', messages }));
}

describe('derived session ids over interleaved runs', () => {
  it('one id per run; different tasks never share; the second run of a task forks once, at call 2', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ task: fc.integer({ min: 0, max: 1 }), calls: fc.integer({ min: 1, max: 4 }) }), {
          minLength: 1,
          maxLength: 4,
        }),
        fc.array(fc.nat(), { minLength: 24, maxLength: 24 }),
        async (runs, picks) => {
          const p = createPipeline({ model: 'm', tokenizer: 'qwen3', store: new MemorySessionStore() });
          const reqs = runs.map((r, i) => run(`r${i}`, r.task, r.calls));
          const ids: string[][] = runs.map(() => []);
          const next = runs.map(() => 0);
          const firstTurnOrder: number[] = [];
          for (let step = 0; next.some((n, i) => n < reqs[i].length); step++) {
            const open = reqs.map((_, i) => i).filter((i) => next[i] < reqs[i].length);
            const i = open[(picks[step % picks.length] ?? 0) % open.length];
            if (next[i] === 1) firstTurnOrder.push(i);
            const res = await p.process(reqs[i][next[i]++], ctx(step));
            expect(res.sessionId.endsWith(SEED_SUFFIX)).toBe(false);
            ids[i].push(res.sessionId);
          }
          for (const [i, r] of runs.entries()) {
            const own = new Set(ids[i].slice(1));
            // From the first turn on, one id.
            expect(own.size).toBeLessThanOrEqual(1);
            // The first run of its task to take a turn keeps its call-1 id throughout.
            const first = firstTurnOrder.find((j) => runs[j].task === r.task);
            if (first === i || runs.filter((x) => x.task === r.task).length === 1) expect(new Set(ids[i]).size).toBe(1);
            for (const [j, o] of runs.entries()) {
              if (j <= i) continue;
              // Different tasks: never one session. Same task: separate from the first turn on.
              const a = o.task === r.task ? ids[i].slice(1) : ids[i];
              const b = new Set(o.task === r.task ? ids[j].slice(1) : ids[j]);
              expect(a.some((x) => b.has(x))).toBe(false);
            }
          }
        },
      ),
      { numRuns: 25, seed: 12 },
    );
  });
});
