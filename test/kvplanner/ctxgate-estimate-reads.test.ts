// ctxgate's cache estimates are reads (review s33 F8): the admission gate asks
// cachedTokensEach for every held call each time it looks, and the gateway's attribution asks
// expectedCachedTokens after each pick, at moments that differ between `serve` and the fleet
// simulator. If a read changed the index (a guessed worker's budget applied, blocks evicted), how
// often anyone looked would move later decisions. Two policies see the same seeded stream of the
// gateway's shape (guessed index, every 4th block kept, a small KV whose budget swings with the
// queued prefill: busy phases let the index remember up to 4 × KV, idle ones cut it back to 1 ×,
// which select applies PREPARE_SHRINK_STEP blocks at a time); one of them also answers many
// estimate reads between the decisions, for the calls "held" and with views whose queues read
// empty. Every choice, every later estimate, the index and the statistics must be the same.
import { describe, expect, it } from 'vitest';
import { CtxgatePolicy } from '../../kvplanner/policies/ctxgate.ts';
import { PREPARE_SHRINK_STEP } from '../../kvplanner/prefix-index.ts';
import type { Choice, RouteInfo, WorkerView } from '../../kvplanner/types.ts';
import { nextChain, rng } from '../helpers/chain-stream.ts';
import { chainInfo, observeSides } from '../helpers/lockstep-steps.ts';

const BLOCK = 16;
const KV_TOKENS = 24_576;

interface InFlight {
  info: RouteInfo;
  picks: Choice[];
}

describe('ctxgate: cache estimates do not change the index', () => {
  it.each([
    [2, false],
    [8, false],
    [4, true],
  ])(
    '%i workers: extra estimate reads leave every decision and the index as they were (each read checked: %s)',
    (n, checkEach) => {
      const r = rng(20_261_202 + n);
      const plain = new CtxgatePolicy({ block_size: BLOCK });
      const reader = new CtxgatePolicy({ block_size: BLOCK });
      const sides = [plain, reader];
      const root = Array.from({ length: 40 }, (_, i) => `root-${i}`);
      const convs: string[][] = [];
      const load = Array.from({ length: n }, () => ({ inFlight: 0, queued: 0 }));
      // the engines' queues swing: busy for 150 decisions, then idle for 150
      let busy = true;
      const views = (idle = false): WorkerView[] =>
        load.map((l, i) => ({
          id: `w${i}`,
          url: `http://w${i}`,
          healthy: true,
          inFlight: l.inFlight,
          queuedPrefillTokens: idle ? 0 : l.queued + (busy ? 60_000 : 0),
          maxInFlight: 0,
          kvTokens: KV_TOKENS,
        }));
      const flying: InFlight[] = [];
      const each: number[][] = [[], []];
      let reads = 0;
      let cuts = 0;
      let fullCuts = 0;
      // what the gate and attribution would ask, any number of times: must change nothing
      const readMany = (): void => {
        const before = checkEach ? JSON.stringify(reader.stats()) : '';
        const infos = flying.map((f) => f.info);
        for (const vs of [views(), views(true), views().slice(1)])
          for (const info of infos) {
            reader.cachedTokensEach(vs, info, each[1]);
            reader.expectedCachedTokens(vs, info);
            reads++;
          }
        if (checkEach) expect(JSON.stringify(reader.stats())).toBe(before);
      };
      const settle = (k: number): void => {
        const f = flying.splice(k, 1)[0];
        const c = f.picks[0];
        const l = load[Number(c.worker.id.slice(1))];
        l.inFlight--;
        l.queued -= Math.max(0, (f.info.promptTokens ?? 0) - (c.predictedCachedTokens ?? 0));
        const ok = r() > 0.1;
        const predicted = c.predictedCachedTokens ?? 0;
        const reported = r() < 0.8 ? predicted : Math.floor(predicted * r());
        // both sides read once here (the gateway's attribution after every answer): the same values
        const expected = sides.map((p) => p.expectedCachedTokens(views(), f.info));
        expect(expected[1]).toBe(expected[0]);
        observeSides(sides, f.picks, f.info, ok, reported);
      };
      for (let step = 0; step < 1800; step++) {
        busy = Math.floor(step / 150) % 2 === 0;
        const { chain, session } = nextChain(r, convs, root, step, {
          continues: 0.65,
          growMin: 8,
          growSpan: 60,
          freshSpan: 120,
        });
        const info = chainInfo(chain, session, step, r, BLOCK);
        readMany();
        const sizes = views().map((w) => plain.index.size(w.id));
        const picks = sides.map((p) => p.select(views(), info)) as Choice[];
        expect(`${step} ${picks[1].worker.id} ${picks[1].branch} ${picks[1].predictedCachedTokens}`).toBe(
          `${step} ${picks[0].worker.id} ${picks[0].branch} ${picks[0].predictedCachedTokens}`,
        );
        // the stream reaches what it is about: a decision that cut another worker's entry (its budget)
        sizes.forEach((s, i) => {
          if (`w${i}` !== picks[0].worker.id && s > plain.index.size(`w${i}`)) cuts++;
          if (`w${i}` !== picks[0].worker.id && s - plain.index.size(`w${i}`) >= PREPARE_SHRINK_STEP) fullCuts++;
        });
        const l = load[Number(picks[0].worker.id.slice(1))];
        l.inFlight++;
        l.queued += Math.max(0, (info.promptTokens ?? 0) - (picks[0].predictedCachedTokens ?? 0));
        flying.push({ info, picks });
        plain.cachedTokensEach(views(), info, each[0]);
        reader.cachedTokensEach(views(), info, each[1]);
        expect(each[1]).toEqual(each[0]);
        readMany();
        while (flying.length > 8 || (flying.length > 0 && r() < 0.5)) settle(Math.floor(r() * flying.length));
      }
      while (flying.length > 0) settle(0);
      expect(reader.stats()).toEqual(plain.stats());
      for (const c of convs) {
        const sampled = c.filter((_, i) => i % 4 === 3);
        for (let w = 0; w < n; w++)
          expect(reader.index.matchLength(`w${w}`, sampled)).toBe(plain.index.matchLength(`w${w}`, sampled));
      }
      expect(reads).toBeGreaterThan(20_000);
      expect(cuts).toBeGreaterThan(50);
      expect(fullCuts).toBeGreaterThan(0);
      expect(plain.stats().index.evictions).toBeGreaterThan(5_000);
    },
  );

  it('a worker the index has never seen reads as holding nothing and gets no entry', () => {
    const p = new CtxgatePolicy({ block_size: BLOCK });
    const w: WorkerView = {
      id: 'fresh',
      url: 'http://fresh',
      healthy: true,
      inFlight: 0,
      queuedPrefillTokens: 0,
      maxInFlight: 0,
      kvTokens: KV_TOKENS,
    };
    const info: RouteInfo = { model: 'm', tenant: 't', blockHashes: ['a', 'b', 'c', 'd'], promptTokens: 64 };
    const out: number[] = [];
    p.cachedTokensEach([w], info, out);
    expect(out).toEqual([0]);
    expect(p.expectedCachedTokens([w], info)).toBe(0);
    expect(p.index.slotCount()).toBe(0);
    p.select([w], info);
    expect(p.expectedCachedTokens([w], info)).toBe(64);
  });
});
