// Routing work in steps (kvplanner/deferred-work.ts): a long chain's prefix-index and shared-prefix
// tracker inserts can run in bounded steps after select() returns (the gateway runs one per turn
// of its event loop). Steps run to the end with nothing in between leave exactly the state one
// insert leaves (generated sequences over branching chains, capacities small enough to evict and
// trim); a policy whose caller defers decides exactly as one that does not once the steps ran; a
// pick's feedback finishes its own work first; short chains and callers without defer are unchanged.
import { describe, expect, it } from 'vitest';
import { KvEventIndex } from '../../kvplanner/kv-events/event-index.ts';
import { CtxgatePolicy } from '../../kvplanner/policies/ctxgate.ts';
import { type IndexEvent, PrefixIndex } from '../../kvplanner/prefix-index.ts';
import { SharedPrefixTracker } from '../../kvplanner/shared-prefix.ts';
import type { RouteInfo, WorkerView } from '../../kvplanner/types.ts';
import { info, workers } from './fixtures.ts';

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => (s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32;
}

/** Chains sharing a root, branching into conversations and forks of them. */
function chains(r: () => number, count: number, maxLen: number): string[][] {
  const out: string[][] = [];
  const root = Array.from({ length: 8 }, (_, i) => `root${i}`);
  for (let c = 0; c < count; c++) {
    const parent = c > 0 && r() < 0.4 ? out[Math.floor(r() * out.length)] : root;
    const cut = Math.min(parent.length, root.length + Math.floor(r() * (parent.length - root.length + 1)));
    const len = 1 + Math.floor(r() * maxLen);
    out.push([...parent.slice(0, cut), ...Array.from({ length: len }, (_, i) => `c${c}-${i}`)]);
  }
  return out;
}

/** Calls a stepped work with seeded step sizes until it is done; returns the steps taken. */
function stepThrough(work: (blocks: number) => boolean, r: () => number): number {
  let steps = 1;
  while (!work(1 + Math.floor(r() * 48))) steps++;
  return steps;
}

describe('prefix index inserts in steps', () => {
  it('end exactly as insert(): entries, evictions, holder masks and events, over generated sequences', () => {
    for (const seed of [1, 2, 3]) {
      const r = rng(seed);
      const pool = chains(r, 80, 300);
      const whole = new PrefixIndex(400);
      const stepped = new PrefixIndex(400);
      const evWhole: IndexEvent[] = [];
      const evStepped: IndexEvent[] = [];
      whole.onChange((e) => evWhole.push(e));
      stepped.onChange((e) => evStepped.push(e));
      const rs = rng(seed + 100);
      let multiStep = 0;
      for (let op = 0; op < 400; op++) {
        const w = `w${Math.floor(r() * 3)}`;
        const c = pool[Math.floor(r() * pool.length)];
        if (r() < 0.85) {
          whole.insert(w, c);
          if (stepThrough(stepped.inserting(w, c), rs) > 1) multiStep++;
        } else {
          const from = Math.floor(r() * c.length);
          whole.evict(w, c.slice(from));
          stepped.evict(w, c.slice(from));
        }
        expect(stepped.stats()).toEqual(whole.stats());
        const out1: number[] = [];
        const out2: number[] = [];
        whole.matchAll(c, out1);
        stepped.matchAll(c, out2);
        expect(out2).toEqual(out1);
      }
      expect(evStepped).toEqual(evWhole);
      expect(multiStep).toBeGreaterThan(100); // the steps really split the work
      for (const c of pool)
        for (const w of ['w0', 'w1', 'w2']) expect(stepped.matchLength(w, c)).toBe(whole.matchLength(w, c));
    }
  });

  it('between steps the entry lists at most what the finished insert lists', () => {
    const idx = new PrefixIndex(10_000);
    const c = Array.from({ length: 1000 }, (_, i) => `b${i}`);
    const step = idx.inserting('w0', c);
    expect(step(100)).toBe(false);
    // the tail first: the root is not in yet
    expect(idx.has('w0', c[999])).toBe(true);
    expect(idx.has('w0', c[0])).toBe(false);
    expect(idx.stats().blocks).toBe(100);
    while (!step(100));
    expect(idx.matchLength('w0', c)).toBe(1000);
  });
});

describe('shared-prefix tracker inserts in steps', () => {
  it('end exactly as insert(), trimming past maxBlocks included', () => {
    for (const seed of [4, 5]) {
      const r = rng(seed);
      const pool = chains(r, 60, 200);
      const whole = new SharedPrefixTracker(1500);
      const stepped = new SharedPrefixTracker(1500);
      const rs = rng(seed + 100);
      for (let op = 0; op < 300; op++) {
        const c = pool[Math.floor(r() * pool.length)];
        whole.insert(c);
        stepThrough(stepped.inserting(c), rs);
        expect(stepped.size).toBe(whole.size);
        for (const q of pool.slice(0, 20)) {
          expect(stepped.sharedDepth(q)).toBe(whole.sharedDepth(q));
          expect(stepped.commonDepth(q, q.length - 1)).toBe(whole.commonDepth(q, q.length - 1));
        }
      }
    }
  });
});

/** A long prompt's route info: `blocks` vLLM block hashes (every 4th is indexed). */
function long(id: number, blocks: number, session?: string, shareWith?: number): RouteInfo {
  const hashes = Array.from({ length: blocks }, (_, i) =>
    shareWith !== undefined && i < blocks / 2 ? `p${shareWith}-${i}` : `p${id}-${i}`,
  );
  return info({ sessionId: session, blockHashes: hashes, promptTokens: blocks * 16 });
}

describe('ctxgate with a caller that defers', () => {
  it('decides exactly as without defer once the steps ran, picks and feedback alike', () => {
    const opts = { default_kv_tokens: 400_000 }; // 6,250 index blocks: long chains evict
    const whole = new CtxgatePolicy(opts);
    const stepped = new CtxgatePolicy(opts);
    const ws1 = workers(3);
    const ws2 = workers(3);
    const steppers: Array<() => boolean> = [];
    const r = rng(7);
    let deferred = 0;
    for (let k = 0; k < 40; k++) {
      const blocks = 1000 + Math.floor(r() * 14_000);
      const session = r() < 0.5 ? `s${Math.floor(r() * 6)}` : undefined;
      const share = k > 0 && r() < 0.4 ? Math.floor(r() * k) : undefined;
      const a = long(k, blocks, session, share);
      const b = { ...a, defer: (s: () => boolean) => void steppers.push(s) };
      const ca = whole.select(ws1, a)!;
      const cb = stepped.select(ws2, b)!;
      expect([cb.worker.id, cb.branch, cb.predictedCachedTokens]).toEqual([
        ca.worker.id,
        ca.branch,
        ca.predictedCachedTokens,
      ]);
      if (steppers.length > 0) deferred++;
      while (steppers.length > 0) {
        const s = steppers.shift()!;
        if (!s()) steppers.push(s);
      }
      const reported = r() < 0.8 ? ca.predictedCachedTokens : 0;
      const ok = r() < 0.9;
      whole.observe({ workerId: ca.worker.id, info: a, ok, reportedCachedTokens: reported });
      stepped.observe({ workerId: cb.worker.id, info: b, ok, reportedCachedTokens: reported });
    }
    expect(deferred).toBeGreaterThan(10);
    expect(stepped.stats()).toEqual(whole.stats());
  });

  it("a long chain's index work waits for the caller's steps; the pick's feedback finishes it first; a short one runs at once", () => {
    const p = new CtxgatePolicy();
    const ws = workers(2);
    const steppers: Array<() => boolean> = [];
    const defer = (s: () => boolean) => void steppers.push(s);
    const a = { ...long(1, 8000), defer };
    const ca = p.select(ws, a)!;
    const chainA = a.blockHashes!.filter((_, i) => i % 4 === 3);
    expect(steppers.length).toBe(1);
    expect(p.index.matchLength(ca.worker.id, chainA)).toBeLessThan(chainA.length);
    // a second long pick queues behind the first: still one stepper
    const b = { ...long(2, 8000), defer };
    p.select(ws, b);
    expect(steppers.length).toBe(1);
    // a short chain runs at once, past the waiting work
    const c = { ...long(3, 400), defer };
    const cc = p.select(ws, c)!;
    expect(
      p.index.matchLength(
        cc.worker.id,
        c.blockHashes!.filter((_, i) => i % 4 === 3),
      ),
    ).toBe(100);
    // a's answer: its own work is finished before the feedback acts on it (b's may still wait)
    p.observe({ workerId: ca.worker.id, info: a, ok: true, reportedCachedTokens: 0 });
    expect(p.index.matchLength(ca.worker.id, chainA)).toBe(chainA.length);
    // the stepper finishes b's and then reports done
    let calls = 0;
    while (!steppers[0]()) calls++;
    expect(calls).toBeGreaterThan(0);
    const chainB = b.blockHashes!.filter((_, i) => i % 4 === 3);
    expect(Math.max(...ws.map((w) => p.index.matchLength(w.id, chainB)))).toBe(chainB.length);
  });

  it('a failed pick takes back what its deferred work added', () => {
    const p = new CtxgatePolicy();
    const ws = workers(2);
    const steppers: Array<() => boolean> = [];
    const a = { ...long(1, 8000), defer: (s: () => boolean) => void steppers.push(s) };
    const ca = p.select(ws, a)!;
    expect(steppers.length).toBe(1);
    p.observe({ workerId: ca.worker.id, info: a, ok: false });
    expect(
      p.index.matchLength(
        ca.worker.id,
        a.blockHashes!.filter((_, i) => i % 4 === 3),
      ),
    ).toBe(0);
    expect(steppers[0]()).toBe(true); // nothing left
  });

  it("a guessed worker whose KV events come back in step while its guess waits keeps the events' blocks only", () => {
    const ev = new KvEventIndex();
    ev.guess('w0', 100_000);
    const p = new CtxgatePolicy({ kv_index: ev, index_stride: 1 });
    const steppers: Array<() => boolean> = [];
    const a = { ...long(1, 3000), defer: (s: () => boolean) => void steppers.push(s) };
    expect(p.select(workers(1), a)!.worker.id).toBe('w0');
    // the tracker's steps first, then the first step of the guess
    while (ev.index.size('w0') === 0) expect(steppers[0]()).toBe(false);
    expect(ev.index.size('w0')).toBeLessThan(3000);
    ev.precise('w0', ['p', 'q']); // the events are in step again: the entry is the engine's
    while (!steppers[0]());
    expect(ev.index.size('w0')).toBe(2);
  });
});

describe('a guessed insert in steps whose entry is emptied meanwhile', () => {
  const setup = () => {
    const ev = new KvEventIndex();
    const p = new CtxgatePolicy({ kv_index: ev, index_stride: 1, block_size: 16 });
    const ws: WorkerView[] = [
      {
        id: 'w0',
        url: 'http://x',
        healthy: true,
        inFlight: 0,
        queuedPrefillTokens: 0,
        maxInFlight: 0,
        kvTokens: 1_048_576,
      },
    ];
    ev.guess('w0', 1_048_576 / 16); // its event feed is down: routing guesses its cache
    const steps: Array<() => boolean> = [];
    // 5,000 blocks: long enough for the policy to defer its index work
    const hashes = Array.from({ length: 5_000 }, (_, i) => `h${i}`);
    const r: RouteInfo = {
      model: 'm',
      tenant: 't',
      sessionId: 's',
      blockHashes: hashes,
      promptTokens: 80_000,
      defer: (s) => steps.push(s),
    };
    p.select(ws, r);
    expect(steps).toHaveLength(1);
    steps[0](); // one turn of the event loop
    return { ev, step: steps[0] };
  };
  const runOut = (step: () => boolean): void => {
    for (let i = 0; i < 10_000 && !step(); i++);
  };

  it('stops once the events are back in step: the precise entry holds what the engine reported', () => {
    const { ev, step } = setup();
    ev.precise('w0', ['engine-block-1', 'engine-block-2']);
    runOut(step);
    expect(ev.guessed('w0')).toBe(false);
    expect(ev.index.size('w0')).toBe(2);
  });

  it('stops once the entry was cleared (a flushed cache, a forgotten worker)', () => {
    const { ev, step } = setup();
    ev.index.clear('w0');
    runOut(step);
    expect(ev.index.size('w0')).toBe(0);
  });
});
