// Seeded PRNG (mulberry32) and helpers: profiles and the synthetic generator must be
// deterministic for a given --seed. O(1) per draw.
export type Rng = () => number;

// one generator for the whole project (kvplanner's, below everything that imports it)
export { mulberry32 } from '../../kvplanner/rng.ts';

/** FNV-1a of a string, to derive per-session / per-call seeds from ids. */
export function hashString(s: string, seed = 0x811c9dc5): number {
  let h = seed >>> 0;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

export function shuffle<T>(items: readonly T[], rng: Rng): T[] {
  const out = items.slice();
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(rng() * (i + 1));
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

export function pick<T>(items: readonly T[], rng: Rng): T {
  return items[Math.floor(rng() * items.length)];
}

export function intBetween(lo: number, hi: number, rng: Rng): number {
  return lo + Math.floor(rng() * (hi - lo + 1));
}
