// llmd_precise against llm-d's own scorer tests, case by case (llm-d/llm-d-inference-scheduler,
// pkg/epp/framework/plugins/scheduling/scorer/…): each scorer alone (the other weights 0), then
// the profile deploy/config/epp-precise-prefix-cache-config.yaml wires them into (2 / 1 / 1,
// max-score picker). The prefix cases use a real KvEventIndex, as the precise scorer reads the
// engines' KV events; upstream tokenises a prompt into chunk keys, here the keys are given.
import { describe, expect, it } from 'vitest';
import { KvEventIndex } from '../../kvplanner/kv-events/event-index.ts';
import { LLMD_DEFAULTS, LlmdPrecisePolicy } from '../../kvplanner/policies/llmd-precise.ts';
import type { WorkerView } from '../../kvplanner/types.ts';
import { info, workers } from './fixtures.ts';

const only = (which: 'prefix' | 'kv' | 'queue') =>
  new LlmdPrecisePolicy({
    prefix_weight: which === 'prefix' ? 1 : 0,
    kv_usage_weight: which === 'kv' ? 1 : 0,
    queue_weight: which === 'queue' ? 1 : 0,
    block_size: 64,
  });

function pods(engines: Array<{ waiting?: number; kvUsage?: number }>): WorkerView[] {
  const ws = workers(engines.length);
  engines.forEach((e, i) => {
    ws[i].engine = { waiting: e.waiting ?? 0, kvUsage: e.kvUsage ?? 0 };
  });
  return ws;
}

describe('queuedepth/queue_test.go TestQueueScorer', () => {
  const score = (waiting: number[]) =>
    only('queue').scores(
      pods(waiting.map((w) => ({ waiting: w }))),
      waiting.map(() => 0),
      1,
    );

  it('"Different queue sizes": 10 / 5 / 0 → 0 / 0.5 / 1', () => {
    expect(score([10, 5, 0])).toEqual([0, 0.5, 1]);
  });

  it('"Same queue sizes" and "Zero queue sizes": the neutral 1 for every pod', () => {
    expect(score([5, 5])).toEqual([1, 1]);
    expect(score([0, 0])).toEqual([1, 1]);
  });
});

describe('kvcacheutilization/kvcache_utilization_test.go TestKvCacheUtilizationScorer', () => {
  const score = (usage: number[]) =>
    only('kv').scores(
      pods(usage.map((u) => ({ kvUsage: u }))),
      usage.map(() => 0),
      1,
    );

  it('"Different KV cache utilization": 0.8 / 0.5 / 0 → 0.2 / 0.5 / 1 (1 − usage, not min-max)', () => {
    const s = score([0.8, 0.5, 0]);
    expect(s[0]).toBeCloseTo(0.2);
    expect(s[1]).toBeCloseTo(0.5);
    expect(s[2]).toBe(1);
  });

  it('"Same", "Zero" and "Full KV cache utilization"', () => {
    expect(score([0.6, 0.6]).map((x) => Number(x.toFixed(4)))).toEqual([0.4, 0.4]);
    expect(score([0, 0])).toEqual([1, 1]);
    expect(score([1, 0.5])).toEqual([0, 0.5]);
  });
});

// preciseprefixcache/precise_prefix_cache_uds_test.go TestPrefixCacheTracking_Score_UDS: the
// expected score is matched chunks ÷ the prompt's chunks (absoluteScoredPods in utils.go).
describe('preciseprefixcache TestPrefixCacheTracking_Score_UDS', () => {
  const chunks = ['c0', 'c1', 'c2', 'c3', 'c4'];
  function scoreWith(held: Record<string, string[]>, n: number): { s: number[]; p: LlmdPrecisePolicy } {
    const ev = new KvEventIndex();
    for (const [w, keys] of Object.entries(held)) ev.blockStored(w, keys);
    const p = new LlmdPrecisePolicy({ kv_index: ev, prefix_weight: 1, kv_usage_weight: 0, queue_weight: 0 });
    const ws = pods(Array.from({ length: n }, () => ({})));
    const depths = ws.map((w) => ev.index.matchLength(w.id, chunks));
    return { s: p.scores(ws, depths, chunks.length), p };
  }

  it('"longest prefix scorer (default scorer)": pods hold 3 / 2 / 1 leading chunks → 3/5, 2/5, 1/5', () => {
    const { s } = scoreWith({ w0: ['c0', 'c1', 'c2'], w1: ['c0', 'c1'], w2: ['c0'] }, 3);
    expect(s.map((x) => Number(x.toFixed(6)))).toEqual([0.6, 0.4, 0.2]);
  });

  // "partial prefix" is where the shared index differs from llm-d's on purpose: a chain key stands
  // for its whole prefix (the index binary-searches the chain), so a pod holding chunks 0 and 2 but
  // not 1 matches 3, where llm-d's walk stops at the gap (1). Engines do not produce that state from
  // events in order — vLLM frees a request's blocks tail first, so a parent is never evicted before
  // its child; SGLang evicts leaves — it needs a lost BlockStored. What engines do produce, the
  // tail evicted first, scores as upstream.
  it('"partial prefix": a tail evicted first scores what is left; a hole (lost event) is the known difference', () => {
    const ev = new KvEventIndex();
    ev.blockStored('w0', ['c0', 'c1', 'c2']);
    ev.blockStored('w1', ['c0', 'c1', 'c2']);
    ev.blockRemoved('w1', ['c2']);
    ev.blockRemoved('w1', ['c1']);
    expect(['w0', 'w1'].map((w) => ev.index.matchLength(w, chunks))).toEqual([3, 1]);
    const hole = scoreWith({ w0: ['c0', 'c1', 'c2'], w1: ['c0', 'c2'], w2: ['c0'] }, 3).s;
    expect(hole.map((x) => Number(x.toFixed(6)))).toEqual([0.6, 0.6, 0.2]); // llm-d: 0.6, 0.2, 0.2
  });

  it('"no cache hits (empty index)": 0 for everyone (absolute, not the old min-max 1.0)', () => {
    expect(scoreWith({}, 3).s).toEqual([0, 0, 0]);
  });

  it('"all endpoints have equal prefix length" and "single endpoint": matched ÷ total, not 1', () => {
    const eq = scoreWith({ w0: ['c0', 'c1'], w1: ['c0', 'c1'], w2: ['c0', 'c1'] }, 3).s;
    expect(eq.map((x) => Number(x.toFixed(6)))).toEqual([0.4, 0.4, 0.4]);
    expect(scoreWith({ w0: ['c0', 'c1'] }, 1).s.map((x) => Number(x.toFixed(6)))).toEqual([0.4]);
  });
});

describe('deploy/config/epp-precise-prefix-cache-config.yaml: the profile as a whole', () => {
  it('weights precise-prefix-cache 2, kv-cache-utilization 1, queue 1; blockSize 64', () => {
    expect(LLMD_DEFAULTS).toMatchObject({ prefix_weight: 2, kv_usage_weight: 1, queue_weight: 1, block_size: 64 });
  });

  // The UDS test's "longest prefix scorer" pods with its queue sizes (0 / 1 / 2) and KV usage
  // 0.1 / 0.1 / 0.1: 2·3/5 + 0.9 + 1 = 3.1, 2·2/5 + 0.9 + 0.5 = 2.2, 2·1/5 + 0.9 + 0 = 1.3 → pod-a;
  // the max-score picker takes it, and the routed block count is what pod-a holds.
  it('"longest prefix" pods with queues 0 / 1 / 2: 3.1 / 2.2 / 1.3 → the pod with 3 chunks', () => {
    const ev = new KvEventIndex();
    ev.blockStored('w0', ['c0', 'c1', 'c2']);
    ev.blockStored('w1', ['c0', 'c1']);
    ev.blockStored('w2', ['c0']);
    const p = new LlmdPrecisePolicy({ kv_index: ev });
    const ws = pods([
      { waiting: 0, kvUsage: 0.1 },
      { waiting: 1, kvUsage: 0.1 },
      { waiting: 2, kvUsage: 0.1 },
    ]);
    const s = p.scores(ws, [3, 2, 1], 5);
    expect(s.map((x) => Number(x.toFixed(6)))).toEqual([3.1, 2.2, 1.3]);
    const c = p.select(ws, info({ blockHashes: ['c0', 'c1', 'c2', 'c3', 'c4'], promptTokens: 5 * 64 }))!;
    expect(c.worker.id).toBe('w0');
    expect(c.predictedCachedTokens).toBe(3 * 64);
  });

  // max-score picker: equal best scores are broken at random (seeded here), so over many calls
  // every tied pod is picked, and a pod below the best never is.
  it('maxscore picker: ties spread over the tied pods only', () => {
    const p = new LlmdPrecisePolicy({ seed: 7 });
    const ws = pods([{ waiting: 0 }, { waiting: 0 }, { waiting: 3 }]);
    const picks = new Set<string>();
    for (let i = 0; i < 60; i++) picks.add(p.select(ws, info({ promptTokens: 10 }))!.worker.id);
    expect([...picks].sort()).toEqual(['w0', 'w1']);
  });
});
