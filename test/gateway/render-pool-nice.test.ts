// Render pool threads lower their priority (render_pool.nice) only after start-up: warm()'s jobs,
// which load the tokenizer while the gateway waits to listen, run at the process's priority (at
// nice 10 on a busy host that load got a tenth of a core: minutes per start); the first job after
// them, and every later one, runs niced. Read in the thread itself (getpriority of the calling
// thread, Linux), so the claim is the order, not a duration.
import { getPriority } from 'node:os';
import { fileURLToPath } from 'node:url';
import { BroadcastChannel } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import { createRenderPool, type RenderPool } from '../../gateway/workers-pool/pool.ts';

/** A thread entry that reports its nice value around each job (test/fixtures/render-pool). */
const LOAD_PROBE = new URL('../fixtures/render-pool/nice-load-probe-thread.mjs', import.meta.url).href;
/** A chat template of the repository's, read by the tokenizer's load (what LOAD_PROBE watches). */
const TEMPLATE = fileURLToPath(new URL('../../configs/templates/chatml.jinja', import.meta.url));
const PROBE = new URL('../fixtures/render-pool/nice-probe-thread.mjs', import.meta.url).href;
/** The fixture's channel name. */
const CHANNEL = 'ctxgate-test-render-nice';

interface Seen {
  startUp: boolean;
  before: number;
  after: number;
}

let pool: RenderPool | undefined;
let channel: BroadcastChannel | undefined;
afterEach(async () => {
  await pool?.close();
  channel?.close();
  pool = undefined;
  channel = undefined;
});

/** Raising one's own nice needs no privilege; lowering it does, so the test's nice is above the process's. */
const base = process.platform === 'linux' ? getPriority() : 0;
const NICE = Math.min(19, base + 5);

describe('render pool priority', () => {
  it.skipIf(process.platform !== 'linux' || NICE === base)(
    "loads the tokenizer in warm() at the process's priority; renices before its first job after start-up",
    async () => {
      const seen: Seen[] = [];
      let wanted = 0;
      let arrived: () => void = () => undefined;
      channel = new BroadcastChannel(CHANNEL);
      channel.onmessage = (e) => {
        seen.push((e as unknown as { data: Seen }).data);
        if (seen.length >= wanted) arrived();
      };
      const until = (n: number) =>
        new Promise<void>((resolve) => {
          wanted = n;
          arrived = resolve;
          if (seen.length >= n) resolve();
        });
      pool = createRenderPool(
        { threads: 1, min_chars: 0, max_queue: 8, max_per_tenant: 8, nice: NICE, max_failures_per_tenant: 8 },
        PROBE,
      )!;
      await pool.warm([{ model: 'm', field: 'models[0].tokenizer', tokenizer: 'qwen3' }]);
      await until(1);
      expect(seen[0]).toEqual({ startUp: true, before: base, after: base });
      const meta = { tenant: 't', affinity: 's' };
      await pool.count({ tokenizer: 'qwen3', texts: ['hello world'] }, meta);
      await pool.count({ tokenizer: 'qwen3', texts: ['hello again'] }, meta);
      await until(3);
      expect(seen.slice(1)).toEqual([
        { startUp: false, before: base, after: NICE },
        { startUp: false, before: NICE, after: NICE },
      ]);
    },
  );

  it.skipIf(process.platform !== 'linux' || NICE === base)(
    "a thread started without warm() (a restart) loads its tokenizer at the process's priority, then renders niced",
    async () => {
      const seen: { templateReadAt?: number; after?: number }[] = [];
      let arrived: () => void = () => undefined;
      channel = new BroadcastChannel('ctxgate-test-render-nice-load');
      channel.onmessage = (e) => {
        seen.push((e as unknown as { data: { templateReadAt?: number; after?: number } }).data);
        if (seen.length >= 2) arrived();
      };
      const both = new Promise<void>((resolve) => {
        arrived = resolve;
      });
      pool = createRenderPool(
        { threads: 1, min_chars: 0, max_queue: 8, max_per_tenant: 8, nice: NICE, max_failures_per_tenant: 8 },
        LOAD_PROBE,
      )!;
      await pool.count(
        { tokenizer: 'qwen3', chatTemplateFile: TEMPLATE, texts: ['hello'] },
        { tenant: 't', affinity: 's' },
      );
      await both;
      expect(seen).toEqual([{ templateReadAt: base }, { after: NICE }]);
    },
  );
});
