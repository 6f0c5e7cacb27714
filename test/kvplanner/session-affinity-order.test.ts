// SessionAffinity keeps its recency order in a linked list through the entries instead of a Map's
// insertion order (a touch was delete + set). Against that Map version, written out here, under
// random assigns (new and re-pinned sessions, moves between workers), reads of live and expired
// pins, sweeps by idle time and by the size bound: every pin read, every worker's totals and the
// size are equal after every step, and the order the size bound drops sessions in is the same.
import { describe, expect, it } from 'vitest';
import { SessionAffinity } from '../../kvplanner/session-affinity.ts';
import { rng } from '../helpers/chain-stream.ts';

/** The Map version: insertion order as recency order, a touch as delete + set. */
class MapOrdered {
  readonly map = new Map<string, { worker: string; tokens: number; lastSeen: number }>();
  readonly perWorker = new Map<string, { sessions: number; tokens: number }>();
  private ops = 0;
  constructor(
    readonly ttlMs: number,
    readonly maxSessions: number,
  ) {}
  entry(key: string, now: number): { worker: string; tokens: number } | undefined {
    const e = this.map.get(key);
    if (!e) return undefined;
    if (now - e.lastSeen > this.ttlMs) {
      this.drop(key, e);
      return undefined;
    }
    return e;
  }
  assign(key: string, worker: string, tokens: number, now: number): void {
    let e = this.map.get(key);
    if (e) {
      this.drop(key, e);
      e.worker = worker;
      e.tokens = tokens;
      e.lastSeen = now;
    } else e = { worker, tokens, lastSeen: now };
    this.map.set(key, e);
    const t = this.totals(worker);
    t.sessions++;
    t.tokens += tokens;
    if (this.map.size > this.maxSessions || (++this.ops & 1023) === 0) this.sweep(now);
  }
  sweep(now: number): void {
    for (const [key, e] of this.map) {
      if (this.map.size <= this.maxSessions && now - e.lastSeen <= this.ttlMs) break;
      this.drop(key, e);
    }
  }
  totals(worker: string): { sessions: number; tokens: number } {
    let t = this.perWorker.get(worker);
    if (!t) this.perWorker.set(worker, (t = { sessions: 0, tokens: 0 }));
    return t;
  }
  private drop(key: string, e: { worker: string; tokens: number }): void {
    this.map.delete(key);
    const t = this.totals(e.worker);
    t.sessions--;
    t.tokens -= e.tokens;
  }
}

describe('SessionAffinity recency order', () => {
  it('answers as the Map-ordered version: pins, totals, size, expiry and the size bound', () => {
    for (const [seed, ttl, max] of [
      [1, 5_000, 200],
      [2, 50_000, 64],
      [3, 2_000, 10_000],
    ] as const) {
      const r = rng(seed);
      const a = new SessionAffinity(ttl, max);
      const b = new MapOrdered(ttl, max);
      const workers = ['w0', 'w1', 'w2', 'w3', 'w4'];
      const wrong: string[] = [];
      let now = 1_000;
      let dropsBySize = 0;
      for (let step = 0; step < 30_000; step++) {
        now += Math.floor(r() * 40);
        const key = `t\u0000s${Math.floor(r() * (max * 1.5 + 50))}`;
        const k = r();
        if (k < 0.45) {
          const x = a.entry(key, now);
          const y = b.entry(key, now);
          if (x?.worker !== y?.worker || x?.tokens !== y?.tokens) wrong.push(`${step} entry ${key}`);
        } else if (k < 0.98) {
          const before = b.map.size;
          const w = workers[Math.floor(r() * workers.length)];
          const tokens = 100 + Math.floor(r() * 5000);
          a.assign(key, w, tokens, now);
          b.assign(key, w, tokens, now);
          if (b.map.size < before) dropsBySize++;
        } else {
          a.sweep(now);
          b.sweep(now);
        }
        if (a.size !== b.map.size) wrong.push(`${step} size ${a.size} ${b.map.size}`);
        for (const w of workers) {
          const x = a.load(w);
          const y = b.perWorker.get(w) ?? { sessions: 0, tokens: 0 };
          if (x.sessions !== y.sessions || x.tokens !== y.tokens) wrong.push(`${step} totals ${w}`);
        }
      }
      // the same sessions are left, with the same pins (read at the last time: none expired by it)
      for (const key of b.map.keys()) if (a.get(key, now) !== b.entry(key, now)?.worker) wrong.push(`left ${key}`);
      expect(wrong).toEqual([]);
      expect(dropsBySize + a.size).toBeGreaterThan(0);
    }
  });
});
