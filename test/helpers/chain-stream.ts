// The seeded request stream the routing lockstep tests replay: block-hash chains of conversations
// that grow over a shared root, forks of earlier ones (half of them without a session), and new
// ones. Each test picks how often a conversation continues and how many blocks a turn adds.

/** A seeded linear congruential generator in [0, 1): the same stream for the same seed. */
export function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => (s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32;
}

export interface ChainMix {
  /** Share of requests that continue a conversation (forks take the rest up to 0.8, new ones the last 0.2). */
  continues: number;
  /** A continued conversation grows by growMin + floor(r × growSpan) blocks. */
  growMin: number;
  growSpan: number;
  /** A new conversation is the root and 1 + floor(r × freshSpan) blocks. */
  freshSpan: number;
}

/** The next request's chain and session; `convs` grows in place. Draws r() in a fixed order. */
export function nextChain(
  r: () => number,
  convs: string[][],
  root: readonly string[],
  step: number,
  mix: ChainMix,
): { chain: string[]; session: string | undefined } {
  const kind = r();
  if (kind < mix.continues && convs.length > 0) {
    const k = Math.floor(r() * convs.length);
    const n = mix.growMin + Math.floor(r() * mix.growSpan);
    convs[k] = [...convs[k], ...Array.from({ length: n }, (_, i) => `c${k}-${step}-${i}`)];
    return { chain: convs[k], session: `s${k}` };
  }
  if (kind < 0.8 && convs.length > 0) {
    const parent = convs[Math.floor(r() * convs.length)];
    const chain = [...parent.slice(0, Math.floor(r() * parent.length)), `f${step}`];
    convs.push(chain);
    return { chain, session: r() < 0.5 ? `s${convs.length - 1}` : undefined };
  }
  const chain = [...root, ...Array.from({ length: 1 + Math.floor(r() * mix.freshSpan) }, (_, i) => `n${step}-${i}`)];
  convs.push(chain);
  return { chain, session: `s${convs.length - 1}` };
}
