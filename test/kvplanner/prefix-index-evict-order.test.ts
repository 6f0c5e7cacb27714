// The prefix index's own LRU (a guessed entry: no KV events) must keep every chain's held blocks a
// prefix of the chain, as vLLM's free queue does (a request frees its blocks tail-first, so a
// block outlives the blocks after it). A session's chain grows call by call and each call stamps
// only its new tail, so without care the oldest call's blocks (the head) go first and leave the
// newer tail listed past a hole, which matchLength's binary search (with or without the session's
// hint) then reports as held: a prediction of cached tokens the engine cannot have.
import { describe, expect, it } from 'vitest';
import { PrefixIndex } from '../../kvplanner/prefix-index.ts';

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => (s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32;
}

/** Longest prefix of `q` the worker holds (what an engine's prefix match finds). */
function linear(idx: PrefixIndex, id: string, q: readonly string[]): number {
  let k = 0;
  while (k < q.length && idx.has(id, q[k])) k++;
  return k;
}

/** Blocks of `q` the worker lists past its longest held prefix (each one sits after a hole). */
function pastHole(idx: PrefixIndex, id: string, q: readonly string[]): number {
  let n = 0;
  for (let k = linear(idx, id, q) + 1; k < q.length; k++) if (idx.has(id, q[k])) n++;
  return n;
}

describe('PrefixIndex eviction keeps held blocks a prefix of each chain', () => {
  it("a session's second call on top of its first, then other sessions: its older head does not go before its later turn", () => {
    const idx = new PrefixIndex(100);
    const a = Array.from({ length: 13 }, (_, i) => `a${i}`);
    idx.insert('w', a.slice(0, 8)); // the first call: 8 blocks
    idx.insert('w', a, true, idx.matchLength('w', a, 8)); // the second adds 5
    // eleven other sessions' first calls, one shorter one: 104 blocks listed, 4 must go (the
    // second call found the first's stamps recent enough to leave them: no re-stamp)
    for (let s = 0; s < 11; s++)
      idx.insert(
        'w',
        Array.from({ length: 8 }, (_, i) => `s${s}-${i}`),
      );
    idx.insert('w', ['x0', 'x1', 'x2']);
    expect(idx.size('w')).toBeLessThanOrEqual(100);
    expect(pastHole(idx, 'w', a)).toBe(0);
    // leaves first, as vLLM's free queue: the newest turn's tail went, the rest is held
    expect(linear(idx, 'w', a)).toBe(9);
    // the session's next call asks with its previous prompt as the hint
    expect(idx.matchLength('w', a, 13)).toBe(linear(idx, 'w', a));
    expect(idx.matchLength('w', a)).toBe(linear(idx, 'w', a));
    const out = new Array<number>(idx.slotCount()).fill(0);
    idx.matchAll(a, out);
    expect(out[idx.slotOf('w')]).toBe(linear(idx, 'w', a));
  });

  it('growing sessions over a shared root, forks and idle sessions: matchLength equals the held prefix after every call', () => {
    const r = rng(20261201);
    const root = Array.from({ length: 6 }, (_, i) => `root${i}`);
    const idx = new PrefixIndex(300);
    /** each session's chain so far (a fork starts from a prefix of another session's) */
    const sessions: string[][] = [];
    let wrong = 0;
    let checked = 0;
    let pastHoles = 0;
    for (let step = 0; step < 4000; step++) {
      let s: number;
      if (sessions.length < 4 || r() < 0.05) {
        const parent = sessions.length > 0 && r() < 0.3 ? sessions[Math.floor(r() * sessions.length)] : root;
        sessions.push(parent.slice(0, root.length + Math.floor(r() * (parent.length - root.length + 1))));
        s = sessions.length - 1;
      } else s = Math.max(0, sessions.length - 1 - Math.floor(r() * Math.min(sessions.length, 12)));
      const chain = sessions[s];
      const hint = chain.length;
      const turn = 1 + Math.floor(r() * 6);
      for (let i = 0; i < turn; i++) chain.push(`s${s}-${chain.length}`);
      idx.insert('w', chain, true, idx.matchLength('w', chain, hint));
      if (step % 25 !== 0) continue;
      for (const q of sessions) {
        checked++;
        const held = linear(idx, 'w', q);
        pastHoles += pastHole(idx, 'w', q);
        if (idx.matchLength('w', q) !== held || idx.matchLength('w', q, Math.min(q.length, held + 3)) !== held) wrong++;
      }
    }
    expect(idx.stats().evictions).toBeGreaterThan(5000);
    expect(checked).toBeGreaterThan(3000);
    expect({ wrong, pastHoles }).toEqual({ wrong: 0, pastHoles: 0 });
    expect(idx.size('w')).toBeLessThanOrEqual(300);
  });
});

describe('PrefixIndex children lists stay bounded', () => {
  it('a root every session extends lists only about as many children as it holds', () => {
    const idx = new PrefixIndex(400);
    const root = Array.from({ length: 8 }, (_, i) => `r${i}`);
    for (let s = 0; s < 5000; s++) {
      const chain = [...root, ...Array.from({ length: 12 }, (_, i) => `s${s}-${i}`)];
      // the root stays recent (every call re-stamps it once stale); the sessions come and go
      idx.insert('w', chain, true, idx.matchLength('w', chain));
    }
    const kids = (idx as unknown as { workers: Map<string, { recs: Map<string, { kids: unknown[] }> }> }).workers
      .get('w')!
      .recs.get('r7')!.kids;
    // ~400 / 12 sessions fit at once: the list holds them plus at most as many gone ones and a few
    expect(kids.length).toBeLessThanOrEqual(2 * 34 + 8);
    expect(idx.has('w', 'r7')).toBe(true);
    expect(idx.size('w')).toBeLessThanOrEqual(400);
  });
});
