// The prefix index's eviction queue (a ring buffer) against a plain array with a head index, the
// representation it replaced: the same entries in the same order after every operation of a
// seeded stream of pushes, shifts and resets that wraps the ring and makes it double.
import { describe, expect, it } from 'vitest';
import { RingQueue } from '../../kvplanner/prefix-index-queue.ts';
import { rng } from '../helpers/chain-stream.ts';

function entries(q: RingQueue<string>): string[] {
  const out: string[] = [];
  q.forEach((x, t) => out.push(`${x}@${t}`));
  return out;
}

describe('RingQueue', () => {
  it('keeps the order a growing array with a head index keeps, across wraps, doublings and resets', () => {
    const r = rng(7);
    const q = new RingQueue<string>();
    let items: string[] = [];
    let ticks: number[] = [];
    let head = 0;
    let n = 0;
    for (let step = 0; step < 20_000; step++) {
      const x = r();
      // phases that fill (doublings) and drain (wraps) the ring
      const pushShare = Math.floor(step / 2000) % 2 === 0 ? 0.7 : 0.35;
      if (x < pushShare) {
        const t = Math.floor(r() * 1e9) + 2 ** 40;
        q.push(`b${n}`, t);
        items.push(`b${n++}`);
        ticks.push(t);
      } else if (x < 0.995) {
        if (head === items.length) continue;
        expect(q.first()).toBe(items[head]);
        expect(q.firstTick()).toBe(ticks[head]);
        q.shift();
        head++;
      } else {
        const live = items.slice(head).filter(() => r() < 0.5);
        const tick = (s: string) => Number(s.slice(1)) * 3;
        q.reset(live, tick);
        items = live;
        ticks = live.map(tick);
        head = 0;
      }
      expect(q.size).toBe(items.length - head);
      if (step % 97 === 0) expect(entries(q)).toEqual(items.slice(head).map((s, i) => `${s}@${ticks[head + i]}`));
    }
    expect(n).toBeGreaterThan(5000);
  });

  it('lets go of a shifted entry (its slot no longer holds it)', () => {
    const q = new RingQueue<object>();
    const a = {};
    q.push(a, 1);
    q.push({}, 2);
    q.shift();
    const seen: object[] = [];
    q.forEach((x) => seen.push(x));
    expect(seen).not.toContain(a);
    expect((q as unknown as { items: unknown[] }).items).not.toContain(a);
  });
});
