// extendBlockKeys (middleware/tokens/prefix-blocks.ts): a chain's routing keys, the previous call's
// copied for the shared blocks. They must always be hashKeys(hashes), whatever made the hashes:
// reused inline, or made afresh on the render pool under another seed (a rotated cache salt).
import { describe, expect, it } from 'vitest';
import { hashSeed } from '../../kvplanner/block-hash.ts';
import { hashKeys } from '../../kvplanner/hash-keys.ts';
import { extendBlockHashes, extendBlockKeys } from '../../middleware/tokens/prefix-blocks.ts';

const ids = (n: number, salt: number): number[] => Array.from({ length: n }, (_, i) => (i * 7919 + salt) % 50_000);

describe('extendBlockKeys', () => {
  it("equals hashKeys of the call's hashes across a session (appends, an edit, another block size)", () => {
    const base = ids(16 * 40, 1);
    let prev: { hashes: string[]; keys: Int32Array; blockSize: number } | undefined;
    for (const [cut, extra, bs] of [
      [640, 0, 16],
      [640, 64, 16],
      [700, 90, 16],
      [200, 300, 16],
      [500, 40, 32],
    ] as const) {
      const cur = [...base.slice(0, cut), ...ids(extra, cut)];
      const common = prev ? Math.min(cut, prev.hashes.length * prev.blockSize) : 0;
      const hashes = extendBlockHashes(cur, bs, prev?.blockSize === bs ? prev : undefined, common);
      const keys = extendBlockKeys(hashes, bs, prev, common);
      expect(keys).toEqual(hashKeys(hashes));
      prev = { hashes, keys, blockSize: bs };
    }
  });

  it('does not copy keys of hashes made under another seed (pool path after a salt rotation)', () => {
    const cur = ids(16 * 30, 2);
    const old = extendBlockHashes(cur, 16, undefined, 0, hashSeed('salt-a'));
    const prev = { hashes: old, keys: hashKeys(old), blockSize: 16 };
    const fresh = extendBlockHashes(cur, 16, undefined, 0, hashSeed('salt-b'));
    expect(extendBlockKeys(fresh, 16, prev, cur.length)).toEqual(hashKeys(fresh));
  });

  it('grows in place when a call continues every block, and never changes a view handed out before', () => {
    const all = ids(16 * 200, 3);
    const first = extendBlockHashes(all.slice(0, 16 * 40), 16);
    const k1 = extendBlockKeys(first, 16);
    const snap1 = k1.slice();
    // call 2 continues all 40 blocks of call 1: its keys are written after call 1's, in its buffer
    const second = extendBlockHashes(all.slice(0, 16 * 60), 16, { hashes: first, blockSize: 16 }, 16 * 40);
    const k2 = extendBlockKeys(second, 16, { hashes: first, keys: k1, blockSize: 16 }, 16 * 40);
    expect(k2.buffer).toBe(k1.buffer);
    expect(k2).toEqual(hashKeys(second));
    // a fork of call 1 (a retry, or a second conversation from the same state): call 1's keys are no
    // longer their buffer's written end, so the fork gets a buffer of its own and k2 is untouched
    const forkIds = [...all.slice(0, 16 * 40), ...ids(16 * 10, 99)];
    const fork = extendBlockHashes(forkIds, 16, { hashes: first, blockSize: 16 }, 16 * 40);
    const snap2 = k2.slice();
    const kf = extendBlockKeys(fork, 16, { hashes: first, keys: k1, blockSize: 16 }, 16 * 40);
    expect(kf.buffer).not.toBe(k1.buffer);
    expect(kf).toEqual(hashKeys(fork));
    expect(k1).toEqual(snap1);
    expect(k2).toEqual(snap2);
    // a call that shares only some of call 2's blocks copies them into a fresh buffer
    const edited = [...all.slice(0, 16 * 50), ...ids(16 * 30, 7)];
    const third = extendBlockHashes(edited, 16, { hashes: second, blockSize: 16 }, 16 * 50);
    const k3 = extendBlockKeys(third, 16, { hashes: second, keys: k2, blockSize: 16 }, 16 * 50);
    expect(k3.buffer).not.toBe(k2.buffer);
    expect(k3).toEqual(hashKeys(third));
    expect(k2).toEqual(snap2);
    // growth past the room: a fresh buffer, same keys
    let prev = { hashes: second, keys: k2, blockSize: 16 };
    for (let blocks = 70; blocks <= 200; blocks += 10) {
      const h = extendBlockHashes(all.slice(0, 16 * blocks), 16, prev, prev.hashes.length * 16);
      const k = extendBlockKeys(h, 16, prev, prev.hashes.length * 16);
      expect(k).toEqual(hashKeys(h));
      prev = { hashes: h, keys: k, blockSize: 16 };
    }
    expect(k2).toEqual(snap2);
  });
});
