// Render pool threads get their own young generation (gateway/workers-pool/thread-heap.ts), not the
// event loop's --max-semi-space-size=64 (node-flags.ts), which V8 lets override a Worker's
// resourceLimits; the event loop keeps the flag's. Read in a child node started with the image's
// flags: heap limits as V8 reports them (old generation plus young generation), no timing.
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { GATEWAY_NODE_FLAGS } from '../../gateway/node-flags.ts';
import { RENDER_THREAD_YOUNG_MB } from '../../gateway/workers-pool/thread-heap.ts';
import { nodeChildOutput } from '../helpers/node-child.ts';

const PROBE = fileURLToPath(new URL('../fixtures/render-pool/young-generation-probe.mjs', import.meta.url));
const MB = 1024 * 1024;
/** The flag the image gives the event loop, in MB (one semi-space). */
const FLAG_SEMI_MB = Number(/--max-semi-space-size=(\d+)/.exec(GATEWAY_NODE_FLAGS.join(' '))?.[1]);

interface Probe {
  mainBefore: number;
  plainWorker: number;
  poolThread: number;
  mainAfter: number;
  mainNewSpace: number;
}

async function probe(): Promise<Probe> {
  return JSON.parse(await nodeChildOutput([...GATEWAY_NODE_FLAGS, PROBE])) as Probe;
}

describe('render pool threads heap', () => {
  it.skipIf(!(FLAG_SEMI_MB > RENDER_THREAD_YOUNG_MB / 3))(
    "a thread's young generation is RENDER_THREAD_YOUNG_MB under the image's --max-semi-space-size; the event loop keeps the flag's",
    async () => {
      const p = await probe();
      // Under the flag a Worker's resourceLimits are overridden: it gets the event loop's limit.
      expect(p.plainWorker).toBe(p.mainBefore);
      // The pool's thread does not: at least its two semi-spaces' worth smaller.
      expect(p.mainBefore - p.poolThread).toBeGreaterThanOrEqual(2 * (FLAG_SEMI_MB - RENDER_THREAD_YOUNG_MB / 3) * MB);
      // The event loop's heap is as it started, and its new space still grows past a default isolate's.
      expect(p.mainAfter).toBe(p.mainBefore);
      expect(p.mainNewSpace).toBeGreaterThan((2 * RENDER_THREAD_YOUNG_MB * MB) / 3);
    },
  );
});
