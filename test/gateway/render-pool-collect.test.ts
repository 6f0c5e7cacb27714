// Render threads collect their garbage where a parked thread would keep it (a thread parked by
// Piscina runs no GC of its own): once after each tokenizer load (its start-up garbage, ~70 MB of
// RSS for qwen3), and on RenderPool.collect() (bench chaos's settled memory readings, via serve's
// SIGUSR2). V8 gives the threads `gc` (thread-heap.ts) without --expose-gc on node's command line,
// and not the event loop. The fixture logs each `gc` call to a file synchronously, so what the file
// holds once a promise resolved ran before it did; no waiting, no timing.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createRenderPool, type RenderPool } from '../../gateway/workers-pool/pool.ts';

const PROBE = new URL('../fixtures/render-pool/gc-probe-thread.mjs', import.meta.url).href;
const CFG = { threads: 2, min_chars: 0, max_queue: 8, max_per_tenant: 8, nice: 0, max_failures_per_tenant: 8 };

let pool: RenderPool | undefined;
let dir: string | undefined;
afterEach(async () => {
  await pool?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
  pool = undefined;
  dir = undefined;
  delete process.env.CTXGATE_TEST_GC_LOG;
});

/** The probe's log: lines per thread id, in order. */
function gcLog(file: string): Map<number, string[]> {
  const out = new Map<number, string[]>();
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (!line) continue;
    const [id, ...what] = line.split(' ');
    out.set(Number(id), [...(out.get(Number(id)) ?? []), what.join(' ')]);
  }
  return out;
}

function startPool(): string {
  dir = mkdtempSync(join(tmpdir(), 'ctxgate-gc-log-'));
  const file = join(dir, 'gc.log');
  writeFileSync(file, '');
  // threads take this process's environment at their start
  process.env.CTXGATE_TEST_GC_LOG = file;
  pool = createRenderPool(CFG, PROBE)!;
  return file;
}

describe('render pool threads collect', () => {
  it("each thread has V8's gc and collects once after its tokenizer load, before warm() resolves; the event loop gets no gc", async () => {
    const mainGc = typeof (globalThis as { gc?: unknown }).gc;
    const file = startPool();
    await pool!.warm([{ model: 'm', field: 'models[0].tokenizer', tokenizer: 'qwen3' }]);
    const threads = pool!.workers().map((w) => w.threadId);
    expect(threads).toHaveLength(2);
    const log = gcLog(file);
    expect([...log.keys()].sort()).toEqual([...threads].sort());
    for (const t of threads) expect(log.get(t)).toEqual(['start function', 'gc']);
    // the flag reaches contexts created after it: not the event loop's
    expect(typeof (globalThis as { gc?: unknown }).gc).toBe(mainGc);
    // a job whose tokenizer is loaded already collects nothing
    await pool!.count({ tokenizer: 'qwen3', texts: ['hello'] }, { tenant: 't', affinity: 'a' });
    for (const t of threads) expect(gcLog(file).get(t)).toEqual(['start function', 'gc']);
  });

  it("collect() runs gc in each running thread before it resolves, counts as their lanes' work meanwhile, and starts none", async () => {
    const file = startPool();
    await pool!.collect();
    expect(pool!.workers()).toHaveLength(0);
    expect(readFileSync(file, 'utf8')).toBe('');
    await pool!.warm([{ model: 'm', field: 'models[0].tokenizer', tokenizer: 'qwen3' }]);
    const threads = pool!.workers().map((w) => w.threadId);
    const collecting = pool!.collect();
    // a big call admitted now waits behind the GC, as behind any job on its lane
    expect(pool!.pending()).toBe(2);
    await collecting;
    expect(pool!.pending()).toBe(0);
    const log = gcLog(file);
    for (const t of threads) expect(log.get(t)).toEqual(['start function', 'gc', 'gc']);
    // a collect is not a render: nothing failed, nothing was retried
    expect(pool!.retries()).toBe(0);
  });
});
