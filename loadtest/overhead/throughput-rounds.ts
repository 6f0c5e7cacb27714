// Paired throughput rounds of `bench overhead`: ctxgate and a peer gateway take turns at the
// throughput concurrency on the same growing traffic, `rounds` times, the order flipping each
// round, and the verdict is the median over pairs of rounds (one ctxgate-first, one peer-first) of
// the geometric mean of the pair's two ratios: whatever the second run of a pair gains or loses
// cancels within each pair, which a median over single rounds (3 of 5 in one order) would
// inherit. One ~3 s run per target moved the
// ratio between 0.75x and 1.23x from one run of the bench to the next on 2 shared cores (the
// load generator, the upstream and the target share them, and whichever runs while the host is
// busier loses), so a single pair cannot say whether a target is met; paired rounds with the
// order alternating put the same drift on both sides. Cost: 2 × rounds × (primer + duration).
// Pure driver: the runs themselves are injected (bench-overhead.ts supplies real ones).

/** Rounds of the paired throughput comparison: an even count, half in each order (3 balanced pairs). */
export const THROUGHPUT_ROUNDS = 6;

export type PairedTarget = 'ctxgate' | 'peer';

export interface RoundRun {
  rps: number;
  requests: number;
  /** Failed or non-2xx responses in the run. */
  errors?: number;
  /** CPU (user + system) of the target's process per request over the run. */
  cpu_ms_per_req?: number;
}

export interface ThroughputRound {
  /** Which target ran first in this round. */
  first: PairedTarget;
  ctxgate: RoundRun;
  peer: RoundRun;
  /** ctxgate's req/s over the peer's. */
  ratio: number;
  /** ctxgate's CPU per request over the peer's, when both were read. */
  cpu_ratio?: number;
}

export interface ThroughputRounds {
  rounds: ThroughputRound[];
  /** Per balanced pair of rounds (2k ctxgate first, 2k+1 peer first): the geometric mean of their
   *  ratios, in which an order effect cancels. */
  pair_ratios: number[];
  /** The verdict: the median of `pair_ratios`. */
  median_ratio: number;
  /** The lowest and highest round ratio: the spread the median was taken from. */
  min_ratio: number;
  max_ratio: number;
  median_cpu_ratio?: number;
}

export function median(xs: readonly number[]): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

/** Runs `rounds` pairs, ctxgate first in even rounds and the peer first in odd ones. */
export async function pairedRounds(
  run: (target: PairedTarget, round: number) => Promise<RoundRun>,
  rounds = THROUGHPUT_ROUNDS,
): Promise<ThroughputRounds> {
  if (!Number.isInteger(rounds) || rounds < 2 || rounds % 2 !== 0)
    throw new RangeError(`rounds must be a positive even integer (half in each order), got ${rounds}`);
  const out: ThroughputRound[] = [];
  for (let r = 0; r < rounds; r++) {
    const order: PairedTarget[] = r % 2 === 0 ? ['ctxgate', 'peer'] : ['peer', 'ctxgate'];
    const got: Partial<Record<PairedTarget, RoundRun>> = {};
    for (const t of order) got[t] = await run(t, r);
    const ctxgate = got.ctxgate!;
    const peer = got.peer!;
    const cg = ctxgate.cpu_ms_per_req;
    const pc = peer.cpu_ms_per_req;
    out.push({
      first: order[0],
      ctxgate,
      peer,
      ratio: peer.rps > 0 ? ctxgate.rps / peer.rps : 0,
      ...(cg !== undefined && pc !== undefined && pc > 0 ? { cpu_ratio: cg / pc } : {}),
    });
  }
  const ratios = out.map((r) => r.ratio);
  const pairs = (xs: number[]): number[] =>
    Array.from({ length: xs.length / 2 }, (_, k) => Math.sqrt(xs[2 * k] * xs[2 * k + 1]));
  const pairRatios = pairs(ratios);
  const cpuRatios = out.flatMap((r) => (r.cpu_ratio === undefined ? [] : [r.cpu_ratio]));
  return {
    rounds: out,
    pair_ratios: pairRatios,
    median_ratio: median(pairRatios),
    min_ratio: Math.min(...ratios),
    max_ratio: Math.max(...ratios),
    ...(cpuRatios.length === out.length ? { median_cpu_ratio: median(pairs(cpuRatios)) } : {}),
  };
}

export function formatRounds(t: ThroughputRounds, peerName: string, connections: number): string[] {
  const lines = t.rounds.map(
    (r, i) =>
      `  round ${i + 1} (${r.first === 'ctxgate' ? 'ctxgate first' : `${peerName} first`}): ctxgate ${r.ctxgate.rps.toFixed(0)} req/s, ` +
      `${peerName} ${r.peer.rps.toFixed(0)} req/s = ${r.ratio.toFixed(2)}x` +
      (r.cpu_ratio !== undefined
        ? `; CPU/req ${r.ctxgate.cpu_ms_per_req!.toFixed(2)} vs ${r.peer.cpu_ms_per_req!.toFixed(2)} ms = ${r.cpu_ratio.toFixed(2)}x`
        : '') +
      (r.ctxgate.errors || r.peer.errors ? `; errors ${r.ctxgate.errors ?? 0} / ${r.peer.errors ?? 0}` : ''),
  );
  return [
    `paired throughput rounds, ${connections} connections, growing sessions (order alternating):`,
    ...lines,
    `  pairs (geometric mean of a ctxgate-first and a ${peerName}-first round): ${t.pair_ratios.map((x) => `${x.toFixed(2)}x`).join(', ')}; ` +
      `median ${t.median_ratio.toFixed(2)}x ${peerName}'s req/s (single rounds ${t.min_ratio.toFixed(2)}-${t.max_ratio.toFixed(2)}x)` +
      (t.median_cpu_ratio !== undefined
        ? `, median CPU per request ${t.median_cpu_ratio.toFixed(2)}x ${peerName}'s`
        : ''),
  ];
}
