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
