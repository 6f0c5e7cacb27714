// ctxgate's routing-cost shortcuts against the plain paths, in lockstep on a seeded stream of the
// gateway's shape (its own guessed index, every 4th block kept, KV small enough that every call
// evicts): the chain a decision samples is reused by the feedback of the same request (the
// expected-cached-tokens read right after select) instead of sampled again; a take-back or a
// correction evicts a chain's tail in place (PrefixIndex.evict's `from`) instead of a sliced copy,
// and skips the blocks its walk below the first one already took. The reference policy samples a
// fresh chain on every read and evicts sliced copies leaves first (the same blocks go, no skip). Every
// choice, every expected-cached-tokens figure, every index event and the index afterwards must
// be the same. The stream: growing sessions over a shared root, forks, calls without a session,
// up to six requests in flight, failures (take-backs), a worker that never reports a cached token
// (its chains evicted after each answer, as with bench overhead's upstream) and corrections.
import { describe, expect, it } from 'vitest';
import { CtxgatePolicy } from '../../kvplanner/policies/ctxgate.ts';
import { type IndexEvent, PrefixIndex } from '../../kvplanner/prefix-index.ts';
import type { Choice, RouteInfo, WorkerView } from '../../kvplanner/types.ts';
import { nextChain, rng } from '../helpers/chain-stream.ts';
import { chainInfo, observeSides } from '../helpers/lockstep-steps.ts';

const BLOCK = 16;
const STRIDE = 4;

/** The plain paths: a fresh sampled chain per read, sliced tails for evictions. */
function reference(): CtxgatePolicy {
  const p = new CtxgatePolicy({ block_size: BLOCK });
  // test-only access to private members (the point is to swap them for the plain versions)
  const r = p as unknown as { chains: { read(info: RouteInfo): unknown } };
  r.chains = {
    read(info: RouteInfo) {
      const full = info.blockHashes ?? [];
      const hashes: string[] = [];
      for (let i = STRIDE - 1; i < full.length; i += STRIDE) hashes.push(full[i]);
      return { hashes, blockTokens: BLOCK * STRIDE, promptTokens: info.promptTokens ?? full.length * BLOCK };
    },
  };
  // a sliced copy, leaves first: the same blocks go (each one's walk below it finds the chain's
  // rest gone already), but no walk from the root can let the loop skip the blocks it reached
  const evict = p.index.evict.bind(p.index);
  p.index.evict = (id: string, hashes: readonly string[], notify = true, from = 0) =>
    evict(id, hashes.slice(from).reverse(), notify);
  return p;
}

interface InFlight {
  info: RouteInfo;
  picks: Choice[];
}

describe('ctxgate: routing-cost shortcuts equal the plain paths', () => {
  it.each([1, 3, 8])('%i worker(s): same choices, expected tokens, index events and index on a seeded stream', (n) => {
    const r = rng(20_261_201 + n);
    const fast = new CtxgatePolicy({ block_size: BLOCK });
    const ref = reference();
    const sides = [fast, ref];
    const events: string[][] = [[], []];
    sides.forEach((p, i) => {
      p.index.onChange((ev: IndexEvent) => {
        // the reference evicts leaves first: the same blocks, in the other order
        const hashes = ev.kind === 'evict' ? [...ev.hashes].sort() : ev.hashes;
        events[i].push(`${ev.kind} ${ev.workerId} ${ev.newFrom} ${hashes.join(',')}`);
      });
    });
    const root = Array.from({ length: 40 }, (_, i) => `root-${i}`);
    const convs: string[][] = [];
    const load = Array.from({ length: n }, () => ({ inFlight: 0, queued: 0 }));
    const views = (): WorkerView[] =>
      load.map((l, i) => ({
        id: `w${i}`,
        url: `http://w${i}`,
        healthy: true,
        inFlight: l.inFlight,
        queuedPrefillTokens: l.queued,
        maxInFlight: 0,
        // small KV: the guessed entries run at capacity and evict on most calls
        kvTokens: 24_576,
      }));
    const flying: InFlight[] = [];
    const branches = new Set<string>();
    let takeBacks = 0;
    const settle = (k: number): void => {
      const f = flying.splice(k, 1)[0];
      const c = f.picks[0];
      load[Number(c.worker.id.slice(1))].inFlight--;
      const ok = r() > 0.12;
      if (!ok) takeBacks++;
      // w0 never reports a cached token; the others mostly what was predicted, sometimes less
      const predicted = c.predictedCachedTokens ?? 0;
      const reported = c.worker.id === 'w0' ? 0 : r() < 0.8 ? predicted : Math.floor(predicted * r());
      const expected = sides.map((p) => p.expectedCachedTokens(views(), f.info));
      expect(expected[1]).toBe(expected[0]);
      observeSides(sides, f.picks, f.info, ok, reported);
    };
    for (let step = 0; step < 2500; step++) {
      const { chain, session } = nextChain(r, convs, root, step, {
        continues: 0.65,
        growMin: 4,
        growSpan: 40,
        freshSpan: 60,
      });
      const info = chainInfo(chain, session, step, r, BLOCK);
      const picks = sides.map((p) => p.select(views(), info)) as Choice[];
      expect(`${picks[1].worker.id} ${picks[1].branch} ${picks[1].predictedCachedTokens}`).toBe(
        `${picks[0].worker.id} ${picks[0].branch} ${picks[0].predictedCachedTokens}`,
      );
      branches.add(picks[0].branch);
      load[Number(picks[0].worker.id.slice(1))].inFlight++;
      flying.push({ info, picks });
      // up to six in flight; one or two answers per call, in any order
      while (flying.length > 6 || (flying.length > 0 && r() < 0.55)) settle(Math.floor(r() * flying.length));
    }
    while (flying.length > 0) settle(0);
    expect(events[1]).toEqual(events[0]);
    expect(fast.stats()).toEqual(ref.stats());
    for (const c of convs) {
      const sampled = c.filter((_, i) => i % STRIDE === STRIDE - 1);
      for (let w = 0; w < n; w++)
        expect(fast.index.matchLength(`w${w}`, sampled)).toBe(ref.index.matchLength(`w${w}`, sampled));
    }
    // the stream reached the paths it is about
    expect(takeBacks).toBeGreaterThan(100);
    expect(fast.stats().feedback.w0?.corrections ?? 0).toBeGreaterThan(10);
    expect(fast.stats().index.evictions).toBeGreaterThan(1000);
    if (n > 1) expect(branches.size).toBeGreaterThan(2);
  });
});

describe('PrefixIndex.evict: a tail in place, skipping what the walk took, equals leaves-first copies', () => {
  it('same blocks, matches and statistics after every operation of a seeded stream of chains, forks and arbitrary lists', () => {
    const r = rng(7_2026);
    const idx = [new PrefixIndex(300), new PrefixIndex(300)];
    const chains: string[][] = [];
    const known = new Set<string>();
    let evicting = 0;
    for (let step = 0; step < 2500; step++) {
      const op = r();
      if (op < 0.45 || chains.length === 0) {
        // a new chain, a fork of one, or one grown
        const base = chains.length > 0 && r() < 0.7 ? chains[Math.floor(r() * chains.length)] : [];
        const c = [
          ...base.slice(0, Math.floor(r() * (base.length + 1))),
          ...Array.from({ length: 1 + Math.floor(r() * 30) }, (_, i) => `b${step}-${i}`),
        ];
        chains.push(c);
        for (const h of c) known.add(h);
        const hint = r() < 0.3 ? Math.floor(r() * c.length) : undefined;
        for (const x of idx) x.insert('w', c, true, hint);
      } else {
        // a chain's tail, or an arbitrary list: blocks of several chains, repeats, gaps
        const c = chains[Math.floor(r() * chains.length)];
        let list: string[];
        let from = 0;
        if (r() < 0.5) {
          list = c;
          from = Math.floor(r() * c.length);
        } else {
          list = [];
          for (let k = Math.floor(r() * 12); k > 0; k--) {
            const d = chains[Math.floor(r() * chains.length)];
            const at = Math.floor(r() * d.length);
            list.push(...d.slice(at, at + 1 + Math.floor(r() * 6)).filter(() => r() < 0.8));
          }
        }
        const n0 = idx[0].evict('w', list, true, from);
        const n1 = idx[1].evict('w', list.slice(from).reverse());
        expect(n0).toBe(n1);
        if (n0 > 0) evicting++;
      }
      if (step % 50 === 0 || op >= 0.45) {
        expect(idx[0].size('w')).toBe(idx[1].size('w'));
        expect(idx[0].stats()).toEqual(idx[1].stats());
      }
      if (step % 500 === 499) for (const h of known) expect(idx[0].has('w', h)).toBe(idx[1].has('w', h));
    }
    for (const c of chains) {
      const out = [[0], [0]];
      idx.forEach((x, i) => x.matchAll(c, out[i]));
      expect(out[0]).toEqual(out[1]);
    }
    expect(evicting).toBeGreaterThan(200);
  });
});
