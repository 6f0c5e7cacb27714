import { describe, expect, it } from 'vitest';
import { cpuSplit } from '../../loadtest/bench-overhead.ts';
import { gcDelta, watchGc } from '../../loadtest/overhead/gc-pauses.ts';
import { mainThreadCpuMs, processCpuMs } from '../../loadtest/overhead/proc-cpu.ts';
import { until } from '../helpers/until.ts';

/** Short-lived garbage (~100 MB, each object reachable for a moment so no optimisation elides it):
 *  far more than a young generation holds, so V8 must scavenge. */
function churn(): number {
  const ring: unknown[] = new Array(1024);
  for (let i = 0; i < 1_000_000; i++) ring[i & 1023] = { i, a: [i, i + 1, i + 2], s: `item ${i}` };
  return ring.length;
}

describe('bench overhead: where the gateway process spends its CPU', () => {
  it('counts the scavenges that garbage forces, as a delta between two readings', async () => {
    const read = watchGc();
    const before = read();
    churn();
    // GC entries reach the observer asynchronously
    await until(() => read().scavenges !== before.scavenges);
    const d = gcDelta(before, read());
    expect(d.scavenges).toBeGreaterThan(0);
    expect(d.scavenge_ms).toBeGreaterThan(0);
    expect(d.mark_compacts).toBeGreaterThanOrEqual(0);
  });

  it.runIf(process.platform === 'linux')('reads the main thread CPU apart from the whole process CPU', () => {
    churn();
    // the main thread first: its CPU only grows, so main then all holds main <= all whatever runs
    // between the two reads (all then main could see main pass a tick the reading of all missed)
    const main = mainThreadCpuMs(process.pid);
    const all = processCpuMs(process.pid);
    expect(all).toBeGreaterThan(0);
    expect(main).toBeGreaterThan(0);
    expect(main!).toBeLessThanOrEqual(all!);
    expect(mainThreadCpuMs(undefined)).toBeUndefined();
  });

  it('splits CPU per request into main thread, its GC pauses, and the other threads', () => {
    const gc = { scavenges: 10, scavenge_ms: 150, mark_compacts: 1, mark_ms: 50 };
    expect(cpuSplit({ cpu_ms_per_req: 5, cpu_main_ms_per_req: 3.5, gc, requests: 400 })).toEqual({
      main_ms: 3.5,
      gc_pause_ms: 0.5,
      other_threads_ms: 1.5,
    });
    // Clock-tick rounding can put the main thread a hair over the process: never a negative share.
    expect(cpuSplit({ cpu_ms_per_req: 3, cpu_main_ms_per_req: 3.02, gc, requests: 400 })?.other_threads_ms).toBe(0);
    expect(cpuSplit({ cpu_ms_per_req: 5, cpu_main_ms_per_req: 3.5, requests: 400 })).toBeUndefined();
    expect(cpuSplit({ cpu_ms_per_req: 5, cpu_main_ms_per_req: 3.5, gc, requests: 0 })).toBeUndefined();
  });
});
