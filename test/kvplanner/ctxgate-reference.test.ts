// The ctxgate policy's fast paths against straightforward ones: a reference policy whose per-worker
// depths are each worker's own unhinted PrefixIndex.matchLength (no holder bitmasks, no slot
// cache), whose session totals are looked up by worker id (SessionAffinity.numberOf, no per-slot cache) and
// whose prompt chain is a fresh object per call, and which records an unpinned pick's chain in the
// shared-prefix tracker inside select() (the policy postpones it to the next observe() or tracker
// read; here 30 % of picks get no feedback before the next call). Both policies see the same seeded stream: chains
// over a shared root with forks, engine events that store chains and remove random blocks (holes),
// workers whose events fall out of step (guessed) and come back, a fleet of 40 (two mask words)
// passed as a new, reshuffled subset of fresh views on every call, as the gateway builds them, and
// feedback after some calls. Every choice (worker, branch, predicted tokens) must be the same.
import { describe, expect, it } from 'vitest';
import { KvEventIndex } from '../../kvplanner/kv-events/event-index.ts';
import { CtxgatePolicy } from '../../kvplanner/policies/ctxgate.ts';
import type { Choice, RouteInfo, WorkerView } from '../../kvplanner/types.ts';
import { nextChain, rng } from '../helpers/chain-stream.ts';
import { chainInfo } from '../helpers/lockstep-steps.ts';

const WORKERS = 40;
const BLOCK = 16;

/** The reference: the same policy with its optimised internals replaced by plain loops. */
function reference(events: KvEventIndex): CtxgatePolicy {
  const p = new CtxgatePolicy({ kv_index: events, index_stride: 1, block_size: BLOCK });
  // test-only access to private methods (the point is to swap them for the straightforward versions)
  const r = p as unknown as Record<string, unknown> & {
    index: CtxgatePolicy['index'];
    affinity: CtxgatePolicy['affinity'];
    guessing(id: string): boolean;
    indexBlocks(w: WorkerView, blockTokens: number): number | undefined;
  };
  const depth: number[] = [];
  const slots: number[] = [];
  r.depths = (workers: readonly WorkerView[], hashes: readonly string[], blockTokens: number): number[] => {
    depth.length = workers.length;
    slots.length = workers.length;
    for (let i = 0; i < workers.length; i++) {
      const w = workers[i];
      // the guessed entry's capacity as the policy sizes it (KV, queued prefill, factor cap)
      const kv = r.indexBlocks(w, blockTokens);
      slots[i] = r.index.prepare(w.id, r.guessing(w.id) ? kv : undefined);
      depth[i] = r.index.matchLength(w.id, hashes);
    }
    return depth;
  };
  r.depth = depth;
  r.slots = slots;
  r.affinityNumber = (_slot: number, id: string) => r.affinity.numberOf(id);
  // an unpinned pick's chain goes into the tracker inside select(), not postponed
  const postponed = (p as unknown as { postponed: { record(hashes: readonly string[]): undefined } }).postponed;
  postponed.record = (hashes: readonly string[]) => {
    p.shared.insert(hashes);
    return undefined;
  };
  r.chain = (info: RouteInfo) => ({
    hashes: info.blockHashes ?? [],
    blockTokens: BLOCK,
    promptTokens: info.promptTokens ?? (info.blockHashes?.length ?? 0) * BLOCK,
  });
  return p;
}

interface Side {
  events: KvEventIndex;
  policy: CtxgatePolicy;
}

describe('ctxgate: fast paths equal straightforward ones', () => {
  it('makes the same choice on every call of a seeded stream with holes, guessed workers and reshuffled views', () => {
    const r = rng(20_261_130);
    const fast: Side = { events: new KvEventIndex(), policy: undefined as unknown as CtxgatePolicy };
    fast.policy = new CtxgatePolicy({ kv_index: fast.events, index_stride: 1, block_size: BLOCK });
    const ref: Side = { events: new KvEventIndex(), policy: undefined as unknown as CtxgatePolicy };
    ref.policy = reference(ref.events);
    const sides = [fast, ref];

    const root = Array.from({ length: 8 }, (_, i) => `root-${i}`);
    const convs: string[][] = [];
    const load = Array.from({ length: WORKERS }, () => ({ inFlight: 0, queued: 0 }));
    const branches = new Map<string, number>();
    let guessedCalls = 0;
    let holes = 0;
    for (let step = 0; step < 3000; step++) {
      // engine events (the same on both sides)
      const ev = r();
      const wid = `w${Math.floor(r() * WORKERS)}`;
      if (ev < 0.25 && convs.length > 0) {
        const c = convs[Math.floor(r() * convs.length)];
        const upTo = 1 + Math.floor(r() * c.length);
        for (const s of sides) s.events.blockStored(wid, c.slice(0, upTo));
      } else if (ev < 0.33 && convs.length > 0) {
        const c = convs[Math.floor(r() * convs.length)];
        const gone = c.filter(() => r() < 0.2);
        holes += gone.length;
        for (const s of sides) s.events.blockRemoved(wid, gone);
      } else if (ev < 0.345) {
        for (const s of sides) s.events.guess(wid, 64);
      } else if (ev < 0.36) {
        const c = convs.length > 0 ? convs[Math.floor(r() * convs.length)] : root;
        for (const s of sides) s.events.precise(wid, c);
      }
      // the request: a conversation's next turn, a new one, or a fork of an old one
      const { chain, session } = nextChain(r, convs, root, step, {
        continues: 0.6,
        growMin: 1,
        growSpan: 6,
        freshSpan: 10,
      });
      const info = chainInfo(chain, session, step, r, BLOCK);
      // fresh views of a reshuffled subset (the gateway leaves out unhealthy and tried workers)
      const ids = Array.from({ length: WORKERS }, (_, i) => i).filter(() => r() < 0.9);
      for (let i = ids.length - 1; i > 0; i--) {
        const j = Math.floor(r() * (i + 1));
        [ids[i], ids[j]] = [ids[j], ids[i]];
      }
      if (ids.length === 0) continue;
      const views = (): WorkerView[] =>
        ids.map((i) => ({
          id: `w${i}`,
          url: `http://w${i}`,
          healthy: true,
          inFlight: load[i].inFlight,
          queuedPrefillTokens: load[i].queued,
          maxInFlight: 0,
          kvTokens: 4096,
        }));
      const picks = sides.map((s) => s.policy.select(views(), info)) as Array<Choice | null>;
      const [a, b] = picks.map(
        (c) => c && { worker: c.worker.id, branch: c.branch, predicted: c.predictedCachedTokens },
      );
      expect(a, `step ${step}`).toEqual(b);
      if (!a) continue;
      branches.set(a.branch, (branches.get(a.branch) ?? 0) + 1);
      if (fast.events.anyGuessed()) guessedCalls++;
      const w = Number(a.worker.slice(1));
      load[w].inFlight++;
      load[w].queued += Math.floor(r() * 4000);
      // some calls finish: feedback on both sides, the same
      if (r() < 0.7) {
        const ok = r() < 0.9;
        const reported = Math.floor(r() * (a.predicted ?? 0) + (r() < 0.5 ? (a.predicted ?? 0) : 0));
        for (const s of sides) s.policy.observe({ workerId: a.worker, info, ok, reportedCachedTokens: reported });
        load[w].inFlight--;
        load[w].queued = Math.max(0, load[w].queued - 3000);
      }
    }
    // the stream reached every branch that depends on the compared paths, with holes and guesses
    for (const b of ['sticky', 'new_session', 'prefix_match', 'overflow'])
      expect(branches.get(b) ?? 0).toBeGreaterThan(0);
    expect(holes).toBeGreaterThan(100);
    // and the shared-prefix trackers hold the same: every conversation's shared root alike
    expect(fast.policy.shared.size).toBe(ref.policy.shared.size);
    expect(convs.map((c) => fast.policy.shared.sharedDepth(c))).toEqual(
      convs.map((c) => ref.policy.shared.sharedDepth(c)),
    );
    expect(guessedCalls).toBeGreaterThan(100);
  });
});
