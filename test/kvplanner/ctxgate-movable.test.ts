// migrate's test (CtxgatePolicy.movable, a detour target that holds most of what the home holds
// beyond the shared root) skips the tracker when no root depth could pass it: the same answer as
// always computing the root with sharedDepth's binary search, checked on a seeded tracker with
// branch points at many depths (and generations dropped under a small cap), for every target and
// home depth of each chain, at several block sizes and min_unique_tokens.
import { describe, expect, it } from 'vitest';
import { CtxgatePolicy } from '../../kvplanner/policies/ctxgate.ts';
import { SharedPrefixTracker } from '../../kvplanner/shared-prefix.ts';
import { rng } from '../helpers/chain-stream.ts';

/** The test as it was: the root from the binary search, then both conditions. */
function movableByRoot(
  tracker: SharedPrefixTracker,
  target: number,
  home: number,
  hashes: readonly string[],
  blockTokens: number,
  minUnique: number,
): boolean {
  const root = tracker.sharedDepth(hashes, Math.max(target, home));
  const mine = target - root;
  return mine * blockTokens >= minUnique && mine >= 0.5 * (home - root);
}

describe('ctxgate: movable() without a tracker read where no root could pass', () => {
  it.each([
    [16, 1],
    [16, 100],
    [64, 256],
    [64, 1024],
  ])(
    'block %i tokens, min_unique_tokens %i: the binary search answer for every depth pair',
    (blockTokens, minUnique) => {
      const policy = new CtxgatePolicy({ min_unique_tokens: minUnique });
      const movable = (
        policy as unknown as {
          movable(target: number, home: number, hashes: readonly string[], blockTokens: number): boolean;
        }
      ).movable.bind(policy);
      const r = rng(20_261_203 + blockTokens + minUnique);
      const chains: string[][] = [Array.from({ length: 24 }, (_, i) => `root-${i}`)];
      let yes = 0;
      let no = 0;
      for (let step = 0; step < 300; step++) {
        // a fork of an earlier chain at a random depth, grown by its own blocks
        const parent = chains[Math.floor(r() * chains.length)];
        const chain = [
          ...parent.slice(0, Math.floor(r() * (parent.length + 1))),
          ...Array.from({ length: 1 + Math.floor(r() * 30) }, (_, i) => `b${step}-${i}`),
        ];
        chains.push(chain);
        policy.shared.insert(chain);
        if (step % 10 !== 0) continue;
        for (const c of chains.slice(-8))
          for (let target = 0; target <= c.length; target += 1 + Math.floor(r() * 3))
            for (let home = 0; home <= c.length; home += 1 + Math.floor(r() * 3)) {
              const want = movableByRoot(policy.shared, target, home, c, blockTokens, minUnique);
              expect(movable(target, home, c, blockTokens), `${target} ${home}`).toBe(want);
              if (want) yes++;
              else no++;
            }
      }
      expect(yes).toBeGreaterThan(100);
      expect(no).toBeGreaterThan(100);
    },
  );

  it('the same after the tracker drops a generation (a small cap)', () => {
    const policy = new CtxgatePolicy({ min_unique_tokens: 32 });
    const tracker = new SharedPrefixTracker(400);
    (policy as unknown as { postponed: { tracker: SharedPrefixTracker } }).postponed.tracker = tracker;
    const movable = (
      policy as unknown as {
        movable(target: number, home: number, hashes: readonly string[], blockTokens: number): boolean;
      }
    ).movable.bind(policy);
    const r = rng(7);
    const chains: string[][] = [Array.from({ length: 16 }, (_, i) => `root-${i}`)];
    for (let step = 0; step < 400; step++) {
      const parent = chains[Math.floor(r() * chains.length)];
      const chain = [...parent.slice(0, Math.floor(r() * (parent.length + 1))), `b${step}`, `b${step}+`];
      chains.push(chain);
      tracker.insert(chain);
      const c = chains[Math.floor(r() * chains.length)];
      for (let k = 0; k < 20; k++) {
        const target = Math.floor(r() * (c.length + 1));
        const home = Math.floor(r() * (c.length + 1));
        expect(movable(target, home, c, 16)).toBe(movableByRoot(tracker, target, home, c, 16, 32));
      }
    }
  });
});
