// Warm-up of one `bench overhead` target until its code is compiled, by one rule for every target
// (direct, bare proxy, Portkey, ctxgate): calls go in chunks of WARMUP_CHUNK_CALLS, and after each
// the serving process's CPU per call (all threads: V8's optimizing compiler runs on helper
// threads) is read from /proc. Warm once the trail stopped falling: the median CPU per call of the
// last WARMUP_WINDOW chunks is no more than WARMUP_FALL_BAND below the median of the WARMUP_WINDOW
// chunks before them (so never before 2 x WARMUP_WINDOW chunks, nor before WARMUP_MIN_CHUNKS);
// bounded by WARMUP_MAX_CHUNKS chunks and WARMUP_MAX_S seconds (then reported as not settled).
// Why: a fixed one-second warm-up left the 16k fixed-body rows measuring TurboFan (other-thread
// CPU ~440, 160, 110, 30, 20 µs/call over the first five 1,000-call windows), not the request
// path; so the floor covers those ~4,000 calls. A rule that stopped at the first chunk that did
// not fall by 5 % stopped on noise (chunk-to-chunk ±10-20 % on a loaded host). The rule before this
// one (the last 2 chunks within 5 % of the lowest so far) was met by a trail still falling: the
// chunk that sets a new lowest is within 5 % of it by definition, so one more step of a slow descent
// passed (s41's end-window base rows: 3950→2570→2460→2490 µs/call stopped at 4,000 calls, ~2.5 ms a
// call, while rows warmed 8,000-10,000 calls cost 1.9-2.0). Medians of 3 ignore one noisy chunk
// either way; comparing two windows asks for a level, not for one low chunk.
// Cost: the chunks' calls; one /proc read per chunk.
import type { LoadResult } from './load.ts';

export const WARMUP_CHUNK_CALLS = 1000;
/** The optimising compiler's measured period (~4,000 calls at 16k bodies): never warm before. */
export const WARMUP_MIN_CHUNKS = 4;
export const WARMUP_MAX_CHUNKS = 10;
/** Chunks per window: warm once the last window's median is not below the previous window's by more than the band. */
export const WARMUP_WINDOW = 3;
/** The fall between two windows' median CPU per call (a fraction of the earlier one) that still counts as level. */
export const WARMUP_FALL_BAND = 0.05;
/** Seconds a warm-up may take: ctxgate at 1 connection on a loaded 2-core host runs ~170-220 calls a
 * second, so 30 s (the bound before) stopped it at 5 chunks, under the floor, still falling (s42). */
export const WARMUP_MAX_S = 60;

export interface WarmUp {
  calls: number;
  /** CPU per call of each chunk (µs), in order; empty where the process's CPU cannot be read. */
  cpu_us_per_call: number[];
  /** The last WARMUP_WINDOW chunks' median fell less than WARMUP_FALL_BAND from the window before (false: a bound stopped it). */
  settled: boolean;
}

/** The median of a short list (the mean of the middle two for an even length). */
function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** Fewest chunks before a target can be warm. */
export const WARMUP_FLOOR_CHUNKS = Math.max(WARMUP_MIN_CHUNKS, 2 * WARMUP_WINDOW);

/** Is the warm-up done after these chunks' CPU per call? (undefined: keep going) */
export function warmUpDone(cpuPerCall: readonly number[], elapsedS: number): boolean | undefined {
  const n = cpuPerCall.length;
  if (n >= WARMUP_FLOOR_CHUNKS) {
    const last = median(cpuPerCall.slice(n - WARMUP_WINDOW));
    const before = median(cpuPerCall.slice(n - 2 * WARMUP_WINDOW, n - WARMUP_WINDOW));
    if (last >= before * (1 - WARMUP_FALL_BAND)) return true;
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
  const floor = w.settled && w.cpu_us_per_call.length <= WARMUP_FLOOR_CHUNKS;
  return `  warm ${w.calls} calls${trail ? ` ${trail} µs/call` : ''}${w.settled ? (floor ? ' (floor)' : '') : ' (bound)'}`;
}
