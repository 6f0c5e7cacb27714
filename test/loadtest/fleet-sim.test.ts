// Fleet simulator invariants on small generated Mooncake-format traces: every request completes
// exactly once, no engine ever holds more KV blocks than it has, every policy sees the same
// arrivals, and the engine model's admission / preemption / prefix cache behave as vLLM's do.
import { describe, expect, it } from 'vitest';
import { DEFAULT_FLEET_POLICIES } from '../../loadtest/fleet/command.ts';
import { EngineModel } from '../../loadtest/fleet/engine-model.ts';
import { simulateFleet } from '../../loadtest/fleet/simulator.ts';
import { summarize } from '../../loadtest/fleet/summary.ts';
import { hashKeys, NOT_A_KEY } from '../../kvplanner/hash-keys.ts';
import { createPolicy, registerPolicy } from '../../kvplanner/policy-registry.ts';
import type { RouteInfo } from '../../kvplanner/types.ts';
import {
  arrange,
  ChainInterner,
  fromMooncake,
  parseMooncake,
  routeHash,
  type FleetRequest,
} from '../../loadtest/fleet/trace.ts';
import { fleetConfig as cfg, FLEET_TEST_TIMING as timing } from '../helpers/fleet-config.ts';
import { conversationTrace, load } from '../helpers/fleet-conversations.ts';

describe('fleet trace input', () => {
  it('parses Mooncake lines and keys blocks by their whole prefix', () => {
    const chain = new ChainInterner();
    const text = [
      '{"timestamp": 0, "input_length": 1100, "output_length": 5, "hash_ids": [7, 8, 9]}',
      '{"timestamp": 10, "input_length": 600, "output_length": 5, "hash_ids": [8, 9]}',
      '{"timestamp": 20, "input_length": 1024, "output_length": 5, "hash_ids": [7, 8]}',
    ].join('\n');
    const [a, b, c] = parseMooncake(text, 'mem', chain);
    expect(a.keys.length).toBe(2); // the third block is partial (76 tokens): never a cache key
    expect(b.keys[0]).not.toBe(a.keys[1]); // id 8 after nothing is not id 8 after 7
    expect(Array.from(c.keys)).toEqual(Array.from(a.keys));
    expect(() => parseMooncake('{"timestamp": 0}', 'bad.jsonl', chain)).toThrow(/bad.jsonl:1: not a Mooncake record/);
    expect(() => parseMooncake('nope', 'bad.jsonl', chain)).toThrow(/bad.jsonl:1: not JSON/);
  });

  it('routes on canonical block hashes and hands the policy their keys, as the gateway does', () => {
    // a distinct key, a distinct canonical hash (what block-hash.ts makes), never read by its string
    const seen = new Set<string>();
    for (let k = 0; k < 20_000; k++) {
      const h = routeHash(k);
      expect(h).toMatch(/^[0-9a-f]{16}$/);
      seen.add(h);
    }
    expect(seen.size).toBe(20_000);
    // the policy the simulator drives sees RouteInfo.blockKeys: the hashes' keys (hash-keys.ts)
    const infos: RouteInfo[] = [];
    registerPolicy('test_fleet_keys', (o) => {
      const p = createPolicy('ctxgate', o);
      const select = p.select.bind(p);
      p.select = (ws, info) => {
        infos.push(info);
        return select(ws, info);
      };
      return p;
    });
    const reqs = load(conversationTrace(6, 4, 3), 3);
    simulateFleet(reqs, cfg('test_fleet_keys'));
    expect(infos.length).toBe(reqs.length);
    for (const info of infos) {
      expect(info.blockHashes!.length).toBeGreaterThan(0);
      expect(Array.from(info.blockKeys!)).toEqual(Array.from(hashKeys(info.blockHashes!)));
      for (let i = 1; i < info.blockKeys!.length; i += 2) expect(info.blockKeys![i]).not.toBe(NOT_A_KEY);
    }
  });

  it('rate scale compresses arrivals and duration cuts them', () => {
    const reqs = load(conversationTrace(3, 3, 1));
    const fast = arrange(reqs, 2);
    expect(fast.at(-1)!.arrivalMs).toBeCloseTo(reqs.at(-1)!.arrivalMs / 2);
    const cut = arrange(reqs, 1, 1);
    expect(cut.every((r) => r.arrivalMs <= 1000)).toBe(true);
    expect(cut.length).toBeLessThan(reqs.length);
  });
});

describe('fleet simulator invariants', () => {
  const reqs = load(conversationTrace(24, 6, 7), 3);
  const summaryOf = (policy: string) =>
    summarize(simulateFleet(reqs, cfg(policy)), {
      preset: 'x',
      rateScale: 1,
      index: 'approx',
      wallS: 0,
      requests: reqs.length,
    });

  it.each(DEFAULT_FLEET_POLICIES)('%s: every request completes exactly once, KV never over capacity', (policy) => {
    const res = simulateFleet(reqs, cfg(policy));
    expect(res.rejected).toBe(0);
    expect(res.outcomes.length).toBe(reqs.length);
    expect(new Set(res.outcomes.map((o) => o.id)).size).toBe(reqs.length);
    expect(res.duplicateFinishes).toBe(0);
    for (const w of res.perWorker) expect(w.peakUsedBlocks).toBeLessThanOrEqual(w.capacityBlocks);
    for (const o of res.outcomes) {
      expect(o.firstTokenMs).toBeGreaterThanOrEqual(o.firstScheduledMs);
      expect(o.firstScheduledMs).toBeGreaterThanOrEqual(o.arrivalMs);
      expect(o.finishMs).toBeGreaterThanOrEqual(o.firstTokenMs);
      expect(o.cachedTokens).toBeLessThan(o.inputTokens); // the last prompt token is always computed
      expect(o.cachedTokens % 512).toBe(0);
    }
  });

  it.each([60_000, 12 * 512])(
    '--engine sglang (kv %i): every request completes exactly once, KV never over capacity, retraction under pressure',
    (kvTokens) => {
      for (const policy of ['round_robin', 'smg_cache_aware', 'ctxgate']) {
        const res = simulateFleet(
          reqs,
          cfg(policy, { engine: 'sglang', kvTokens, workers: kvTokens < 10_000 ? 2 : 4 }),
        );
        expect(res.outcomes.length + res.rejected).toBe(reqs.length);
        expect(new Set(res.outcomes.map((o) => o.id)).size).toBe(res.outcomes.length);
        expect(res.duplicateFinishes).toBe(0);
        for (const w of res.perWorker) expect(w.peakUsedBlocks).toBeLessThanOrEqual(w.capacityBlocks);
        for (const o of res.outcomes) {
          expect(o.cachedTokens).toBeLessThan(o.inputTokens);
          expect(o.finishMs).toBeGreaterThanOrEqual(o.firstTokenMs);
        }
        if (kvTokens < 10_000) expect(res.perWorker.reduce((a, w) => a + w.preemptions, 0)).toBeGreaterThan(0);
        else expect(res.outcomes.some((o) => o.cachedTokens > 512)).toBe(true);
      }
    },
  );

  it('--engine sglang --index precise: the KV event index lists exactly what each radix tree holds', () => {
    for (const policy of ['ctxgate', 'dynamo_kv', 'llmd_precise', 'smg_cache_aware']) {
      // a tight KV evicts (BlockRemoved) as well as stores
      const res = simulateFleet(reqs, cfg(policy, { engine: 'sglang', index: 'precise', kvTokens: 20 * 512 }));
      expect(res.outcomes.length).toBe(reqs.length - res.rejected);
      expect(new Set(res.outcomes.map((o) => o.id)).size).toBe(res.outcomes.length);
      for (const w of res.perWorker) {
        expect(w.indexedBlocks).toBe(w.cachedBlocks);
        expect(w.peakUsedBlocks).toBeLessThanOrEqual(w.capacityBlocks);
      }
      expect(res.perWorker.some((w) => w.cachedBlocks > 0)).toBe(true);
    }
    // engine blocks finer than the trace's: a trace block is listed while all its sub-blocks are cached
    const fine = simulateFleet(reqs, cfg('ctxgate', { engine: 'sglang', index: 'precise', blockSize: 128 }));
    expect(fine.outcomes.length).toBe(reqs.length - fine.rejected);
    expect(fine.perWorker.some((w) => (w.indexedBlocks ?? 0) > 0)).toBe(true);
    // (a tree holds a sub-block only under its parents: 4 cached sub-blocks per listed trace block)
    for (const w of fine.perWorker) expect((w.indexedBlocks ?? 0) * 4).toBeLessThanOrEqual(w.cachedBlocks);
  });

  it('every policy sees identical arrivals', () => {
    const seen = DEFAULT_FLEET_POLICIES.map((p) => simulateFleet(reqs, cfg(p)).arrivals);
    for (const a of seen) expect(a).toEqual(reqs.map((r) => r.arrivalMs));
  });

  it('a cache-aware policy reuses more than round robin on conversations', () => {
    const rr = summaryOf('round_robin');
    const cg = summaryOf('ctxgate');
    expect(cg.hit_rate).toBeGreaterThan(rr.hit_rate + 0.1);
    expect(cg.prefill_tokens).toBeLessThan(rr.prefill_tokens);
  });

  it("breaks the run down by the policy's branches: their requests add up to the run's", () => {
    const s = summaryOf('ctxgate');
    const b = Object.entries(s.branches);
    // conversations over a shared root: some turns follow their history, the first ones cannot
    expect(s.branches.prefix_match?.requests).toBeGreaterThan(0);
    expect(s.branches.prefix_match.hit_rate).toBeGreaterThan(s.hit_rate);
    expect(b.reduce((a, [, x]) => a + x.requests, 0)).toBe(s.completed);
    // most requests first: the order is stable for the JSON
    for (let i = 1; i < b.length; i++) expect(b[i][1].requests).toBeLessThanOrEqual(b[i - 1][1].requests);
    for (const [, x] of b) expect(x.ttft_p90_ms).toBeGreaterThan(0);
    const rr = summaryOf('round_robin');
    expect(Object.keys(rr.branches)).toEqual(['rotate']);
  });

  it('a tight KV budget preempts (vLLM recompute) and still completes everything within capacity', () => {
    const res = simulateFleet(reqs, cfg('round_robin', { kvTokens: 12 * 512, workers: 2 }));
    expect(res.perWorker.reduce((a, w) => a + w.preemptions, 0)).toBeGreaterThan(0);
    expect(res.outcomes.length + res.rejected).toBe(reqs.length);
    for (const w of res.perWorker) expect(w.peakUsedBlocks).toBeLessThanOrEqual(w.capacityBlocks);
    // a request bigger than an engine is refused, not left waiting forever
    expect(res.rejected).toBe(reqs.filter((r) => r.inputTokens + r.outputTokens > 12 * 512).length);
  });

  it('--index precise: the KV event index lists exactly what each engine caches', () => {
    for (const policy of ['ctxgate', 'dynamo_kv', 'llmd_precise', 'smg_cache_aware']) {
      const res = simulateFleet(reqs, cfg(policy, { index: 'precise', kvTokens: 20 * 512 }));
      expect(res.outcomes.length).toBe(reqs.length - res.rejected);
      for (const w of res.perWorker) expect(w.indexedBlocks).toBe(w.cachedBlocks);
      expect(res.perWorker.some((w) => w.cachedBlocks > 0)).toBe(true);
    }
  });

  it('books each step once as prefill or decode-only time; the timeline adds up to the totals', () => {
    const roomy = simulateFleet(reqs, cfg('round_robin', { timelineMs: 1000 }));
    const tight = simulateFleet(reqs, cfg('round_robin', { kvTokens: 12 * 512, workers: 2, timelineMs: 1000 }));
    const waitingShare = (r: typeof roomy): number => {
      const s = summarize(r, { preset: 'x', rateScale: 1, index: 'approx', wallS: 0, requests: reqs.length });
      expect(s.engine_time.decode_only_waiting).toBeLessThanOrEqual(s.engine_time.decode_only);
      expect(s.engine_time.prefill + s.engine_time.decode_only).toBeLessThanOrEqual(1);
      expect(s.engine_time.decode_riding).toBeGreaterThanOrEqual(0);
      expect(s.engine_time.decode_riding).toBeLessThanOrEqual(1);
      expect(s.slowest_decile.queue_wait_s + s.slowest_decile.prefill_s).toBeGreaterThan(0);
      return s.engine_time.decode_only_waiting;
    };
    for (const res of [roomy, tight]) {
      const endS = Math.max(...res.outcomes.map((o) => o.finishMs)) / 1000;
      const total = { prefillS: 0, decodeOnlyS: 0, decodeOnlyWaitingS: 0 };
      for (const w of res.perWorker) {
        const e = w.engineTime;
        expect(e.prefillS).toBeGreaterThan(0);
        expect(e.decodeOnlyWaitingS).toBeLessThanOrEqual(e.decodeOnlyS);
        // one engine runs one step at a time: its booked time fits the run
        expect(e.prefillS + e.decodeOnlyS).toBeLessThanOrEqual(endS + 1e-6);
        for (const k of ['prefillS', 'decodeOnlyS', 'decodeOnlyWaitingS'] as const) total[k] += e[k];
        expect(e.decodeContextRiding + e.decodeContextAlone).toBeGreaterThan(0);
      }
      const tl = res.timeline!;
      expect(tl.reduce((a, r) => a + r.arrivals, 0)).toBe(reqs.length);
      for (const k of ['prefillS', 'decodeOnlyS', 'decodeOnlyWaitingS'] as const)
        expect(tl.reduce((a, r) => a + r[k], 0)).toBeCloseTo(total[k], 6);
      for (const r of tl) expect(r.kvUsageMean).toBeLessThanOrEqual(1);
    }
    // 12 blocks per engine: heads wait for blocks while the running requests decode
    expect(waitingShare(tight)).toBeGreaterThan(waitingShare(roomy));
    expect(simulateFleet(reqs, cfg('round_robin')).timeline).toBeUndefined();
  });

  it('is deterministic', () => {
    const a = simulateFleet(reqs, cfg('dynamo_kv'));
    const b = simulateFleet(reqs, cfg('dynamo_kv'));
    expect(a.outcomes).toEqual(b.outcomes);
  });
});

describe('engine model', () => {
  const chain = new ChainInterner();
  const req = (id: number, ids: number[], input: number, output = 4): FleetRequest =>
    fromMooncake({ timestamp: 0, input_length: input, output_length: output, hash_ids: ids }, id, chain);

  function drain(e: EngineModel): number {
    let t = 0;
    for (let guard = 0; guard < 10_000; guard++) {
      const r = e.step(t);
      if (!r) return t;
      t += r.durationS * 1000;
    }
    throw new Error('engine did not drain');
  }

  it('serves a repeated prefix from cache, never the last token', () => {
    const e = new EngineModel({ kvTokens: 64 * 512, blockSize: 512, timing });
    const a = e.add(req(0, [1, 2, 3], 3 * 512));
    drain(e);
    expect(a.cachedTokens).toBe(0);
    const b = e.add(req(1, [1, 2, 3], 3 * 512)); // identical prompt: the last block holds the last token
    drain(e);
    expect(b.cachedTokens).toBe(2 * 512);
    const c = e.add(req(2, [1, 2, 3, 4], 3 * 512 + 100));
    drain(e);
    expect(c.cachedTokens).toBe(3 * 512);
  });

  it('chunked prefill: a prompt longer than the token budget takes several steps', () => {
    const e = new EngineModel({ kvTokens: 64 * 512, blockSize: 512, timing, maxBatchedTokens: 512 });
    const a = e.add(req(3, [11, 12, 13, 14], 4 * 512, 1));
    let steps = 0;
    for (let t = 0; e.step(t); t += 1) steps++;
    expect(steps).toBe(4);
    expect(a.prefilled).toBe(4 * 512);
  });

  it('reports the context of the tokens decoded in a step (what rides along a prefill, KV-weighted)', () => {
    const e = new EngineModel({ kvTokens: 64 * 512, blockSize: 512, timing, maxBatchedTokens: 512 });
    e.add(req(8, [61], 300, 3));
    expect(e.step(0)?.decodeContext).toBe(0); // its prefill: nothing decodes yet
    e.add(req(9, [71, 72], 2 * 512, 1));
    // the first request decodes its 2nd token over its 300 prompt tokens' KV beside the second
    // one's first chunk (511 tokens of the 512 budget), then its 3rd beside the second chunk
    expect(e.step(1)?.decodeContext).toBe(300);
    expect(e.step(2)?.decodeContext).toBe(301);
    expect(e.step(3)?.decodeContext).toBe(0); // the second's last 2 tokens; the first is done
    expect(e.step(4)).toBeNull();
  });

  it('waits when blocks run short instead of over-committing', () => {
    const e = new EngineModel({ kvTokens: 6 * 512, blockSize: 512, timing });
    const a = e.add(req(4, [21, 22, 23, 24], 4 * 512, 2));
    const b = e.add(req(5, [31, 32, 33, 34], 4 * 512, 2));
    e.step(0);
    expect(e.running).toEqual([a]);
    expect(e.waiting).toEqual([b]);
    drain(e);
    expect(b.finishMs).toBeGreaterThan(a.finishMs);
    expect(e.peakUsedBlocks).toBeLessThanOrEqual(6);
  });

  it('preempts the latest running request when decode runs out of blocks, then recomputes it', () => {
    const e = new EngineModel({ kvTokens: 5 * 512, blockSize: 512, timing });
    const a = e.add(req(6, [41, 42], 2 * 512 - 1, 600));
    const b = e.add(req(7, [51, 52], 2 * 512 - 1, 600));
    drain(e);
    expect(a.finishMs).toBeGreaterThan(0);
    expect(b.finishMs).toBeGreaterThan(0);
    expect(e.preemptions).toBeGreaterThan(0);
    expect(b.preemptions).toBeGreaterThan(0);
    expect(a.preemptions).toBe(0);
    expect(e.peakUsedBlocks).toBeLessThanOrEqual(5);
  });
});
