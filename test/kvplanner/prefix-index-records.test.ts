// The prefix index's entry keeps one record per block (queue and children lists point at records)
// instead of Maps keyed by hash; the previous, hash-keyed entry is kept as the reference
// (test/helpers/prefix-index-v1/). Both replay one seeded stream of operations: inserts whole and
// in steps with other operations between the steps, hints right and wrong, evictions of tails and
// of arbitrary lists (repeats, gaps, blocks of other chains), whole-cache clears, capacity changes,
// worker removals, a precise entry (no children kept), and chains that reuse a hash under another
// parent (a collision: a children list then names a block another chain re-added). After every
// operation, on the workers it touched (every 50th: on all), the held blocks in the order they
// became held, their stamps, the live queue in order and the clock, and the statistics must be the
// same; the events, and every chain's matchLength, has and matchAll at the checkpoints, too.
import { describe, expect, it } from 'vitest';
import { type IndexEvent, PrefixIndex } from '../../kvplanner/prefix-index.ts';
import type { RingQueue } from '../../kvplanner/prefix-index-queue.ts';
import { PrefixIndex as ReferenceIndex } from '../helpers/prefix-index-v1/index.ts';
import { rng } from '../helpers/chain-stream.ts';

interface NewEntry {
  clock: number;
  recs: Map<string, { h: string; t: number; seq: number }>;
  queue: RingQueue<{ h: string }>;
}
interface OldEntry {
  clock: number;
  blocks: Map<string, number>;
  qHash: string[];
  qTick: number[];
  head: number;
}

/** Held blocks (hash@stamp, in the order they became held) and queue (hash@tick from the head). */
function stateOf(idx: PrefixIndex | ReferenceIndex, only?: string): string[] {
  const out: string[] = [];
  for (const [id, e] of (idx as unknown as { workers: Map<string, NewEntry | OldEntry> }).workers) {
    if (only !== undefined && id !== only) continue;
    let held: string[];
    const q: string[] = [];
    if ('blocks' in e) {
      held = [...e.blocks].map(([h, t]) => `${h}@${t}`);
      for (let k = e.head; k < e.qHash.length; k++) q.push(`${e.qHash[k]}@${e.qTick[k]}`);
    } else {
      held = [...e.recs.values()]
        .filter((r) => r.t > 0)
        .sort((a, b) => a.seq - b.seq)
        .map((r) => `${r.h}@${r.t}`);
      e.queue.forEach((r, t) => q.push(`${r.h}@${t}`));
    }
    out.push(`${id} clock ${e.clock} held ${held.join(',')}`, `${id} queue ${q.join(',')}`);
  }
  return out;
}

describe('PrefixIndex entry records equal the hash-keyed entry', () => {
  it.each([
    [1, 60],
    [3, 200],
    [5, 40],
    [7, 90],
  ])('seed %i, capacity %i: same held blocks, stamps, queue, events and matches after every operation', (seed, cap) => {
    const r = rng(2026_1201 + seed);
    const fast = new PrefixIndex(cap);
    const ref = new ReferenceIndex(cap);
    const events: string[][] = [[], []];
    [fast, ref].forEach((x, i) =>
      x.onChange((ev: IndexEvent) => events[i].push(`${ev.kind} ${ev.workerId} ${ev.newFrom} ${ev.hashes.join(',')}`)),
    );
    const workers = ['w0', 'w1', 'w2', 'precise'];
    for (const x of [fast, ref]) x.setCapacity('precise', 2 ** 33);
    const chains: string[][] = [[]];
    /** chains with a collision, never extended */
    const dead: string[][] = [];
    /** stepped inserts under way, one per side */
    let stepping: { w: string; fast: (n: number) => boolean; ref: (n: number) => boolean } | undefined;
    const counts = { steps: 0, evicted: 0, clears: 0, removals: 0, collisions: 0, capacity: 0 };
    for (let step = 0; step < 3000; step++) {
      const op = r();
      const w = workers[Math.floor(r() * workers.length)];
      if (op < 0.5) {
        const base = chains[Math.floor(r() * chains.length)];
        const keep = r() < 0.6 ? base.length : Math.floor(r() * (base.length + 1));
        const grow = Array.from({ length: 1 + Math.floor(r() * 25) }, (_, i) => `b${step}-${i}`);
        const c = [...base.slice(0, keep), ...grow];
        if (r() < 0.04 && chains.length > 2) {
          // a collision: one of a few hashes, each the last block of chains never extended, under
          // many parents (never a parent itself: a cycle in the children lists leaves nothing to evict)
          c.push(`z${Math.floor(r() * 4)}`);
          dead.push(c);
          counts.collisions++;
        } else chains.push(c);
        const hintKind = r();
        const hint =
          hintKind < 0.4 ? fast.matchLength(w, c) : hintKind < 0.6 ? Math.floor(r() * (c.length + 1)) : undefined;
        if (hint !== undefined) expect(fast.matchLength(w, c)).toBe(ref.matchLength(w, c));
        if (stepping === undefined && r() < 0.2) {
          stepping = { w, fast: fast.inserting(w, c, true, hint), ref: ref.inserting(w, c, true, hint) };
        } else {
          fast.insert(w, c, true, hint);
          ref.insert(w, c, true, hint);
        }
      } else if (op < 0.8) {
        const c =
          dead.length > 0 && r() < 0.1 ? dead[Math.floor(r() * dead.length)] : chains[Math.floor(r() * chains.length)];
        if (r() < 0.5) {
          const from = Math.floor(r() * (c.length + 1));
          expect(fast.evict(w, c, true, from)).toBe(ref.evict(w, c, true, from));
        } else {
          const list: string[] = [];
          for (let k = Math.floor(r() * 10); k > 0; k--) {
            const d = chains[Math.floor(r() * chains.length)];
            const at = Math.floor(r() * (d.length + 1));
            list.push(...d.slice(at, at + 1 + Math.floor(r() * 8)).filter(() => r() < 0.8));
          }
          expect(fast.evict(w, list)).toBe(ref.evict(w, list));
        }
        counts.evicted++;
      } else if (op < 0.86) {
        const cap2 = Math.max(1, Math.floor(cap * (0.3 + r() * 1.2)));
        if (r() < 0.5) {
          fast.setCapacity(w, cap2);
          ref.setCapacity(w, cap2);
        } else expect(fast.prepare(w, cap2)).toBe(ref.prepare(w, cap2));
        counts.capacity++;
      } else if (op < 0.89) {
        expect(fast.clear(w)).toBe(ref.clear(w));
        counts.clears++;
      } else if (op < 0.9) {
        fast.removeWorker(w);
        ref.removeWorker(w);
        counts.removals++;
      }
      const touched = [w];
      if (stepping !== undefined && r() < 0.6) {
        touched.push(stepping.w);
        const n = 1 + Math.floor(r() * 12);
        const done = stepping.fast(n);
        expect(stepping.ref(n)).toBe(done);
        counts.steps++;
        if (done) stepping = undefined;
      }
      for (const only of step % 50 === 0 ? [undefined] : touched)
        expect(stateOf(fast, only)).toEqual(stateOf(ref, only));
      expect(fast.stats()).toEqual(ref.stats());
      // the dense per-slot mirrors routing reads equal the entries' own capacity and blocks held
      for (const id of workers) {
        const slot = fast.slotOf(id);
        const want = slot < 0 ? [fast.defaultCapacity, 0] : [fast.capacity(id), fast.size(id) / fast.capacity(id)];
        expect([fast.capacityOfSlot(slot), fast.fillOfSlot(slot)]).toEqual(want);
      }
      if (step % 100 === 99) {
        const seen: string[][] = [[], []];
        for (const c of [...chains, ...dead])
          [fast, ref].forEach((x, i) => {
            const out = new Array<number>(x.slotCount());
            x.matchAll(c, out);
            const has = workers.map((id) => c.slice(-3).map((h) => (x.has(id, h) ? 1 : 0)));
            seen[i].push(`${out} ${workers.map((id) => x.matchLength(id, c))} ${has}`);
          });
        expect(seen[0]).toEqual(seen[1]);
      }
    }
    expect(events[0]).toEqual(events[1]);
    // the stream reached the paths it is about
    expect(fast.stats().evictions).toBeGreaterThan(2000);
    expect(counts.steps).toBeGreaterThan(50);
    expect(counts.clears + counts.removals + counts.collisions).toBeGreaterThan(50);
    expect(counts.capacity).toBeGreaterThan(50);
  });
});

describe('PrefixIndex entry records: the paths a random stream seldom takes', () => {
  /** Both indexes, one operation list applied to each. */
  function pair(cap: number): [PrefixIndex, ReferenceIndex] {
    return [new PrefixIndex(cap), new ReferenceIndex(cap)];
  }

  it('a child whose record left the Map and came back under another parent still keeps the first parent', () => {
    const [fast, ref] = pair(8);
    for (const x of [fast, ref]) {
      x.insert('w', ['a0', 'a1', 'z']);
      x.evict('w', ['z']); // z's record leaves the Map; a1 still lists it
      x.insert('w', ['b0', 'z']); // z is back, a new record, under b0
      // fill to capacity and beyond: a1 is oldest but z (its child, by hash) is held
      x.insert('w', ['c0', 'c1', 'c2', 'c3', 'c4']);
    }
    expect(stateOf(fast)).toEqual(stateOf(ref));
    expect(ref.has('w', 'a1')).toBe(true);
    expect(fast.has('w', 'a1')).toBe(true);
  });

  it("the queue rebuilt from the held blocks orders one stamp's blocks as they became held", () => {
    const [fast, ref] = pair(1000);
    for (const x of [fast, ref]) {
      // p is listed for its child q, then q's stepped insert is cut short by a clear: p's record
      // stays (listed, not held) while q goes
      x.insert('w', ['r', 'p', 'q']);
      const step = x.inserting('w', ['s', 'p2', 'q2'], true, 0);
      step(1); // q2 held, p2 listed for it
      x.clear('w');
      // then p2 held with a new block after it in one insert: p2 was in the Map first, but is
      // stamped (becomes held) after its child
      x.insert('w', ['s', 'p2', 'q3']);
      // feedback evictions and re-inserts pile stale queue entries until the queue is rebuilt
      for (let k = 0; k < 700; k++) {
        x.insert('w', ['u0', 'u1']);
        x.evict('w', ['u0', 'u1']);
      }
    }
    const q = (fast as unknown as { workers: Map<string, NewEntry> }).workers.get('w')!;
    expect(q.queue.size).toBeLessThan(1100); // rebuilt at least once
    expect(stateOf(fast)).toEqual(stateOf(ref));
  });
});
