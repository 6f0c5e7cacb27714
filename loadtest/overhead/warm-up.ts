// Warm-up of one `bench overhead` target until its code is compiled, by one rule for every target
// (direct, bare proxy, Portkey, ctxgate): calls go in chunks of WARMUP_CHUNK_CALLS, and after each
// the serving process's CPU per call (all threads: V8's optimizing compiler runs on helper
// threads) is read from /proc. Warm when a chunk's CPU per call fell by less than
// WARMUP_SETTLED_FALL from the chunk before it, after at least WARMUP_MIN_CHUNKS chunks; bounded
// by WARMUP_MAX_CHUNKS chunks and WARMUP_MAX_S seconds (then reported as not settled). Why: a
// fixed one-second warm-up left the 16k fixed-body rows measuring TurboFan (other-thread CPU
// ~440 µs/call over the first 1,000 calls, ~20 from ~4,000 on), not the request path.
// Cost: the chunks' calls; one /proc read per chunk.
import type { LoadResult } from './load.ts';

export const WARMUP_CHUNK_CALLS = 1000;
export const WARMUP_MIN_CHUNKS = 2;
export const WARMUP_MAX_CHUNKS = 8;
/** Warm once CPU per call falls by less than this fraction from one chunk to the next. */
export const WARMUP_SETTLED_FALL = 0.05;
export const WARMUP_MAX_S = 30;

export interface WarmUp {
  calls: number;
  /** CPU per call of each chunk (µs), in order; empty where the process's CPU cannot be read. */
  cpu_us_per_call: number[];
  /** The last chunk's CPU per call fell by less than WARMUP_SETTLED_FALL (false: a bound stopped it). */
  settled: boolean;
}

/** Is the warm-up done after these chunks' CPU per call? (undefined: keep going) */
export function warmUpDone(cpuPerCall: readonly number[], elapsedS: number): boolean | undefined {
  const n = cpuPerCall.length;
  if (n >= WARMUP_MIN_CHUNKS && cpuPerCall[n - 1] >= cpuPerCall[n - 2] * (1 - WARMUP_SETTLED_FALL)) return true;
  if (n >= WARMUP_MAX_CHUNKS || elapsedS >= WARMUP_MAX_S) return false;
  return undefined;
}

/**
 * Warms a target: `send(amount)` sends that many calls, `cpuMs()` reads the serving process's CPU
 * so far (undefined: unreadable, then WARMUP_MIN_CHUNKS chunks are sent and it is not settled).
 */
export async function warmUp(
  send: (amount: number) => Promise<LoadResult>,
  cpuMs: () => number | undefined,
): Promise<WarmUp> {
  const t0 = Date.now();
  const perCall: number[] = [];
  let calls = 0;
  for (;;) {
    const c0 = cpuMs();
    const r = await send(WARMUP_CHUNK_CALLS);
    const c1 = cpuMs();
    calls += r.requests;
    if (c0 === undefined || c1 === undefined || r.requests === 0) {
      if (calls >= WARMUP_MIN_CHUNKS * WARMUP_CHUNK_CALLS || r.requests === 0)
        return { calls, cpu_us_per_call: perCall, settled: false };
      continue;
    }
    perCall.push(((c1 - c0) * 1000) / r.requests);
    const done = warmUpDone(perCall, (Date.now() - t0) / 1000);
    if (done !== undefined) return { calls, cpu_us_per_call: perCall, settled: done };
  }
}

/** ` warm 3000 calls 812→455→441 µs/call` (` (bound)` when not settled). */
export function fmtWarmUp(w: WarmUp): string {
  const trail = w.cpu_us_per_call.map((x) => x.toFixed(0)).join('→');
  return `  warm ${w.calls} calls${trail ? ` ${trail} µs/call` : ''}${w.settled ? '' : ' (bound)'}`;
}
