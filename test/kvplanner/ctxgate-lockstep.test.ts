// ctxgate's routing-cost shortcuts against the plain paths, in lockstep on a seeded stream of the
// gateway's shape (its own guessed index, every 4th block kept, KV small enough that every call
// evicts): the chain a decision samples is reused by the feedback of the same request (the
// expected-cached-tokens read right after select) instead of sampled again, and a take-back or a
// correction evicts a chain's tail in place (PrefixIndex.evict's `from`) instead of a sliced
// copy. The reference policy samples a fresh chain on every read and evicts sliced copies. Every
// choice, every expected-cached-tokens figure, every index event and the index afterwards must
// be the same. The stream: growing sessions over a shared root, forks, calls without a session,
// up to six requests in flight, failures (take-backs), a worker that never reports a cached token
// (its chains evicted after each answer, as with bench overhead's upstream) and corrections.
import { describe, expect, it } from 'vitest';
import { CtxgatePolicy } from '../../kvplanner/policies/ctxgate.ts';
import type { IndexEvent } from '../../kvplanner/prefix-index.ts';
import type { Choice, RouteInfo, WorkerView } from '../../kvplanner/types.ts';

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => (s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32;
}

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
  const evict = p.index.evict.bind(p.index);
  p.index.evict = (id: string, hashes: readonly string[], notify = true, from = 0) =>
    evict(id, from > 0 ? hashes.slice(from) : hashes, notify);
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
      p.index.onChange((ev: IndexEvent) =>
        events[i].push(`${ev.kind} ${ev.workerId} ${ev.newFrom} ${ev.hashes.join(',')}`),
      );
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
      sides.forEach((p, i) => {
        p.observe({
          workerId: f.picks[i].worker.id,
          info: f.info,
          ok,
          reportedCachedTokens: ok ? reported : undefined,
          promptTokens: f.info.promptTokens,
          predictedCachedTokens: f.picks[i].predictedCachedTokens,
        });
      });
    };
    for (let step = 0; step < 2500; step++) {
      let chain: string[];
      let session: string | undefined;
      const kind = r();
      if (kind < 0.65 && convs.length > 0) {
        const k = Math.floor(r() * convs.length);
        convs[k] = [...convs[k], ...Array.from({ length: 4 + Math.floor(r() * 40) }, (_, i) => `c${k}-${step}-${i}`)];
        chain = convs[k];
        session = `s${k}`;
      } else if (kind < 0.8 && convs.length > 0) {
        const parent = convs[Math.floor(r() * convs.length)];
        chain = [...parent.slice(0, Math.floor(r() * parent.length)), `f${step}`];
        convs.push(chain);
        session = r() < 0.5 ? `s${convs.length - 1}` : undefined;
      } else {
        chain = [...root, ...Array.from({ length: 1 + Math.floor(r() * 60) }, (_, i) => `n${step}-${i}`)];
        convs.push(chain);
        session = `s${convs.length - 1}`;
      }
      const info: RouteInfo = {
        model: 'm',
        tenant: 't',
        sessionId: session,
        blockHashes: chain,
        promptTokens: chain.length * BLOCK + Math.floor(r() * BLOCK),
        nowMs: 1_000_000 + step * 50,
      };
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
