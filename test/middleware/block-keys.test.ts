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
});
