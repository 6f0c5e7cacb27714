import { describe, expect, it } from 'vitest';
import { SharedPrefixTracker } from '../../kvplanner/shared-prefix.ts';

const c = (tag: string, n: number, from = 0): string[] => Array.from({ length: n }, (_, i) => `${tag}${from + i}`);

describe('SharedPrefixTracker', () => {
  it('a growing conversation is not shared; a second continuation marks the common part', () => {
    const t = new SharedPrefixTracker();
    const a1 = [...c('r', 4), ...c('a', 2)];
    const a2 = [...a1, ...c('a', 3, 2)];
    t.insert(a1);
    t.insert(a2);
    expect(t.sharedDepth(a2)).toBe(0);
    t.insert([...c('r', 4), ...c('b', 3)]);
    expect(t.sharedDepth(a2)).toBe(4);
    expect(t.commonDepth(a2, 9)).toBe(4);
  });

  it('commonDepth sees a new branch before it is inserted', () => {
    const t = new SharedPrefixTracker();
    t.insert([...c('r', 4), ...c('a', 2)]);
    const b = [...c('r', 4), ...c('b', 2)];
    expect(t.sharedDepth(b)).toBe(0);
    expect(t.commonDepth(b, 4)).toBe(4); // leaves the stored chain right after the root
    const a3 = [...c('r', 4), ...c('a', 5)];
    expect(t.commonDepth(a3, 6)).toBe(0); // continues it
  });

  it('stays bounded', () => {
    const t = new SharedPrefixTracker(1000);
    for (let i = 0; i < 100; i++) t.insert(c(`s${i}-`, 50));
    expect(t.size).toBeLessThanOrEqual(1000);
  });
});

describe('SharedPrefixTracker generations', () => {
  it('a root every session starts with stays shared while other chains fill the tracker many times over', () => {
    const t = new SharedPrefixTracker(1000);
    const root = c('root', 20);
    let lost = 0;
    for (let s = 0; s < 400; s++) {
      // a new session from the root, then 40 blocks of unrelated traffic (16 k blocks in all)
      const chain = [...root, ...c(`s${s}-`, 10)];
      if (s >= 2 && t.commonDepth(chain, 20) !== 20) lost++;
      t.insert(chain);
      t.insert(c(`other${s}-`, 40));
      if (s >= 2 && t.sharedDepth(chain) !== 20) lost++;
      expect(t.size).toBeLessThanOrEqual(1000);
    }
    expect(lost).toBe(0);
  });

  it("a chain's middle known only to the old generation is copied under a young root, not lost (review s25 F7)", () => {
    // generations of 4 blocks; the same inserts into an unbounded tracker give the reference
    const inserts = [
      ['R', 'm', 'd'],
      ['x1'],
      ['y1'],
      ['R', 'e'],
      ['R', 'm', 'd', 'f'],
      ['R', 'z'],
      ['R', 'm', 'd', 'f', 'g'],
      ['R', 'm', 'w'],
    ];
    const t = new SharedPrefixTracker(8);
    const ref = new SharedPrefixTracker(1e6);
    for (const chain of inserts) {
      t.insert(chain);
      ref.insert(chain);
      expect(t.size).toBeLessThanOrEqual(8);
    }
    // m is a branch point (d and w follow it): both trackers must know it
    expect(ref.sharedDepth(['R', 'm', 'd', 'f', 'g'])).toBe(2);
    expect(t.sharedDepth(['R', 'm', 'd', 'f', 'g'])).toBe(2);
    expect(t.commonDepth(['R', 'm', 'w'], 3)).toBe(ref.commonDepth(['R', 'm', 'w'], 3));
  });

  it('a full young generation becomes the old one and the old one is dropped whole: the size stays bounded', () => {
    const t = new SharedPrefixTracker(10_000);
    const young = (): Map<string, string> => (t as unknown as { young: Map<string, string> }).young;
    let rotations = 0;
    for (let s = 0; s < 2000; s++) {
      const before = young();
      t.insert(c(`k${s}-`, 50));
      if (young() !== before) rotations++;
    }
    // 100 k blocks through a 10 k tracker: a new young generation every 5 k blocks
    expect(rotations).toBeGreaterThanOrEqual(19);
    expect(t.size).toBeLessThanOrEqual(10_000);
  });
});

describe('SharedPrefixTracker: the tail past the first unknown block is stored without lookups', () => {
  it("another chain that stores this one's tail between two steps still makes a branch point", () => {
    // x's root is new: its first step walks 2 blocks, both unknown. Between the steps y stores x's
    // next blocks with another continuation; x's second step must look them up again (a branch at
    // x3), not store its own continuations over y's as if they were still unknown
    const x = c('x', 6);
    const y = [...c('x', 4), 'y4'];
    const t = new SharedPrefixTracker();
    const step = t.inserting(x);
    expect(step(2)).toBe(false);
    t.insert(y);
    while (!step(2));
    const ref = new SharedPrefixTracker();
    ref.insert(x.slice(0, 2));
    ref.insert(y);
    ref.insert(x);
    expect(t.sharedDepth(x)).toBe(4);
    expect(t.sharedDepth(x)).toBe(ref.sharedDepth(x));
    expect(t.commonDepth(y, 5)).toBe(ref.commonDepth(y, 5));
  });
});
