// The two steps every routing lockstep test repeats around its own checks: the request a chain
// becomes (one r() draw, for the partial last block) and both sides told the same outcome.
import type { Choice, RouteFeedback, RouteInfo } from '../../kvplanner/types.ts';

/** The routing request of a chain: its blocks of `block` tokens plus a partial one, at step's time. */
export function chainInfo(
  chain: string[],
  session: string | undefined,
  step: number,
  r: () => number,
  block: number,
): RouteInfo {
  return {
    model: 'm',
    tenant: 't',
    sessionId: session,
    blockHashes: chain,
    promptTokens: chain.length * block + Math.floor(r() * block),
    nowMs: 1_000_000 + step * 50,
  };
}

/** Each side hears its own pick's outcome: the same report, its own prediction. */
export function observeSides(
  sides: readonly { observe(feedback: RouteFeedback): void }[],
  picks: readonly Choice[],
  info: RouteInfo,
  ok: boolean,
  reported: number,
): void {
  sides.forEach((p, i) => {
    p.observe({
      workerId: picks[i].worker.id,
      info,
      ok,
      reportedCachedTokens: ok ? reported : undefined,
      promptTokens: info.promptTokens,
      predictedCachedTokens: picks[i].predictedCachedTokens,
    });
  });
}
