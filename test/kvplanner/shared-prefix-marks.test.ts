// The shared-prefix tracker's sharedDepth reads each generation's set of blocks marked shared
// instead of the generations' Maps: on a seeded stream of inserts (whole and in steps, interleaved),
// with generations of a few blocks so that they roll often, chains over shared roots with forks,
// and chains that are not hash chains at all (arbitrary strings: a block's value can be written
// over), every sharedDepth and commonDepth must be the one a binary search over the Maps' values
// gives (what the tracker answered before the sets).
import { describe, expect, it } from 'vitest';
import { SharedPrefixTracker } from '../../kvplanner/shared-prefix.ts';
import { rng } from '../helpers/chain-stream.ts';

const SHARED = '*';

/** sharedDepth as a binary search over the generations' values (young first, then old). */
function byMaps(t: SharedPrefixTracker, hashes: readonly string[], limit = hashes.length): number {
  const g = t as unknown as { young: Map<string, string>; old: Map<string, string> };
  const get = (h: string): string | undefined => g.young.get(h) ?? g.old.get(h);
  let lo = 0;
  let hi = Math.min(limit, hashes.length);
  while (lo < hi) {
    const mid = (lo + hi + 1) >>> 1;
    if (get(hashes[mid - 1]) === SHARED) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

function chainOf(r: () => number, roots: string[][]): string[] {
  const kind = r();
  if (kind < 0.15) {
    // not a hash chain: a few arbitrary blocks from a small alphabet (values get written over)
    return Array.from({ length: 1 + Math.floor(r() * 6) }, () => `z${Math.floor(r() * 12)}`);
  }
  const root = roots[Math.floor(r() * roots.length)];
  const fork = Math.floor(r() * (root.length + 1));
  const tail = Array.from({ length: Math.floor(r() * 8) }, (_, i) => `${root[0]}/${fork}/${Math.floor(r() * 3)}-${i}`);
  return [...root.slice(0, fork), ...tail];
}

describe('SharedPrefixTracker: shared marks kept per generation', () => {
  for (const maxBlocks of [8, 40, 400]) {
    it(`sharedDepth and commonDepth equal a search over the Maps (generations of ${maxBlocks / 2} blocks)`, () => {
      const r = rng(maxBlocks);
      const roots = Array.from({ length: 4 }, (_, k) => Array.from({ length: 3 + k * 3 }, (_, i) => `r${k}-${i}`));
      const t = new SharedPrefixTracker(maxBlocks);
      const steps: Array<(blocks: number) => boolean> = [];
      const seen: string[][] = [];
      let checks = 0;
      let sharedSeen = 0;
      for (let i = 0; i < 4000; i++) {
        const chain = chainOf(r, roots);
        seen.push(chain);
        if (r() < 0.3) steps.push(t.inserting(chain));
        else t.insert(chain);
        // advance (or finish) a stepped insert now and then
        if (steps.length > 0 && r() < 0.5) {
          const k = Math.floor(r() * steps.length);
          if (steps[k](1 + Math.floor(r() * 3))) steps.splice(k, 1);
        }
        for (let q = 0; q < 3; q++) {
          const x = seen[Math.floor(r() * seen.length)];
          const limit = Math.floor(r() * (x.length + 2));
          const want = byMaps(t, x, limit);
          expect(t.sharedDepth(x, limit)).toBe(want);
          expect(t.sharedDepth(x)).toBe(byMaps(t, x));
          const held = Math.min(x.length, limit);
          // commonDepth: the same, through the value of the block before a new branch
          const g = t as unknown as { young: Map<string, string>; old: Map<string, string> };
          const cont = held > 0 && held < x.length ? (g.young.get(x[held - 1]) ?? g.old.get(x[held - 1])) : undefined;
          const branches = cont !== undefined && cont !== '' && cont !== SHARED && cont !== x[held];
          expect(t.commonDepth(x, held)).toBe(branches ? held : byMaps(t, x, held));
          checks++;
          if (want > 0) sharedSeen++;
        }
      }
      // the stream exercised what it means to: many answers above 0, generations rolled
      expect(checks).toBe(12_000);
      expect(sharedSeen).toBeGreaterThan(maxBlocks === 8 ? 100 : 1000);
    });
  }
});
