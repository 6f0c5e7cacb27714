// The fake upstream's lazy block pool evicts exactly what the reference worker's BlockPool evicts:
// both driven in lockstep by random requests (a chain of blocks looked up, held, new ones
// allocated, a private partial block, all freed tail first), every key's presence compared after
// each request, through enough requests to compact the lazy queue many times.
import { describe, expect, it } from 'vitest';
import { FakeBlockPool, type FakeBlock } from '../../loadtest/fake-block-pool.ts';
import { BlockPool, type PoolBlock } from '../../loadtest/sim-worker/block-pool.ts';
import { mulberry32 } from '../../loadtest/profiles/rng.ts';

describe('FakeBlockPool', () => {
  it('evicts what BlockPool evicts (lockstep, random chains, tight capacity)', () => {
    for (const capacity of [7, 64, 300]) {
      const rng = mulberry32(capacity);
      const ref = new BlockPool<number>(capacity);
      const fake = new FakeBlockPool(capacity);
      const keys = 600;
      let compared = 0;
      for (let r = 0; r < 4000; r++) {
        // a chain: a root among a few, then a run of keys
        const start = Math.floor(rng() * 8) * 50;
        const len = 1 + Math.floor(rng() * 40);
        const heldA: PoolBlock<number>[] = [];
        const heldB: FakeBlock[] = [];
        for (let k = start; k < start + len; k++) {
          let a = ref.get(k);
          let b = fake.get(k);
          if ((b !== undefined) !== (a !== undefined)) expect({ request: r, key: k }).toBe(undefined);
          if (a && b) {
            ref.ref(a);
            fake.ref(b);
          } else {
            a = ref.allocate(k);
            b = fake.allocate(k);
            if ((b !== undefined) !== (a !== undefined)) expect({ request: r, allocate: k }).toBe(undefined);
            if (!a || !b) break;
          }
          heldA.push(a);
          heldB.push(b);
        }
        const pa = rng() < 0.5 ? ref.allocate() : undefined;
        const pb = pa !== undefined ? fake.allocatePrivate() : false;
        if (pa) ref.unref(pa);
        if (pb) fake.releasePrivate();
        for (let i = heldA.length - 1; i >= 0; i--) {
          ref.unref(heldA[i]);
          fake.unref(heldB[i]);
        }
        let differ = 0;
        for (let k = 0; k < keys; k++) if ((fake.get(k) !== undefined) !== (ref.get(k) !== undefined)) differ++;
        if (differ > 0) expect({ request: r, differ }).toBe(undefined);
        compared++;
      }
      expect(compared).toBe(4000);
      expect(fake.evictions).toBe(ref.evictions);
      expect(fake.evictions).toBeGreaterThan(0);
    }
  });
});
