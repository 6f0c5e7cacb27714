// Warm-up of one `bench overhead` target until its code is compiled, by one rule for every target
// (direct, bare proxy, Portkey, ctxgate): calls go in chunks of WARMUP_CHUNK_CALLS, and after each
// the serving process's CPU per call (all threads: V8's optimizing compiler runs on helper
// threads) is read from /proc. Warm once, after at least WARMUP_MIN_CHUNKS chunks, the last
// WARMUP_SETTLED_RUN chunks each cost within WARMUP_SETTLED_BAND of the cheapest chunk so far;
// bounded by WARMUP_MAX_CHUNKS chunks and WARMUP_MAX_S seconds (then reported as not settled).
// Why: a fixed one-second warm-up left the 16k fixed-body rows measuring TurboFan (other-thread
// CPU ~440, 160, 110, 30, 20 µs/call over the first five 1,000-call windows), not the request
// path; so the floor covers those ~4,000 calls. A rule that stopped at the first chunk that did
// not fall by 5 % stopped on noise (chunk-to-chunk ±10-20 % on a loaded host: rows ended after
// 2,000 to 7,000 calls, some mid-compile); a run of chunks near the lowest is what warm looks like.
// Cost: the chunks' calls; one /proc read per chunk.
import type { LoadResult } from './load.ts';

export const WARMUP_CHUNK_CALLS = 1000;
/** The optimising compiler's measured period (~4,000 calls at 16k bodies): never warm before. */
export const WARMUP_MIN_CHUNKS = 4;
export const WARMUP_MAX_CHUNKS = 10;
/** A chunk counts as settled when its CPU per call is within this fraction above the lowest so far. */
export const WARMUP_SETTLED_BAND = 0.05;
/** Settled chunks in a row that make a target warm. */
export const WARMUP_SETTLED_RUN = 2;
export const WARMUP_MAX_S = 30;

export interface WarmUp {
  calls: number;
  /** CPU per call of each chunk (µs), in order; empty where the process's CPU cannot be read. */
  cpu_us_per_call: number[];
  /** The last WARMUP_SETTLED_RUN chunks were within WARMUP_SETTLED_BAND of the lowest (false: a bound stopped it). */
  settled: boolean;
}

/** Is the warm-up done after these chunks' CPU per call? (undefined: keep going) */
export function warmUpDone(cpuPerCall: readonly number[], elapsedS: number): boolean | undefined {
  const n = cpuPerCall.length;
  if (n >= Math.max(WARMUP_MIN_CHUNKS, WARMUP_SETTLED_RUN)) {
    const low = Math.min(...cpuPerCall);
    if (cpuPerCall.slice(n - WARMUP_SETTLED_RUN).every((x) => x <= low * (1 + WARMUP_SETTLED_BAND))) return true;
  }
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

/** ` warm 5000 calls 812→455→441→450→443 µs/call`; ` (bound)` when not settled, ` (floor)` when
 * warm after the fewest chunks the rule allows (compare such a row's trail with the others'). */
export function fmtWarmUp(w: WarmUp): string {
  const trail = w.cpu_us_per_call.map((x) => x.toFixed(0)).join('→');
  const floor = w.settled && w.cpu_us_per_call.length <= WARMUP_MIN_CHUNKS;
  return `  warm ${w.calls} calls${trail ? ` ${trail} µs/call` : ''}${w.settled ? (floor ? ' (floor)' : '') : ' (bound)'}`;
}
