// A small simulated fleet for policy comparisons in tests: each worker has a true block LRU (what
// an engine's prefix cache holds); agent sessions share one root and grow by a turn per call;
// several calls are in flight at once. Returns the token-weighted prefix-cache hit rate.
import { blockHashes } from '../../kvplanner/block-hash.ts';
import { createPolicy } from '../../kvplanner/policy-registry.ts';
import type { RouteInfo, WorkerView } from '../../kvplanner/types.ts';
import { workers as makeWorkers } from './fixtures.ts';

export interface FleetSimOptions {
  workers: number;
  sessions: number;
  turns: number;
  rootTokens: number;
  turnTokens: number;
  capacityTokens: number;
  concurrency: number;
  withSessionIds: boolean;
  seed: number;
}

class TrueCache {
  private readonly lru = new Map<string, true>();
  constructor(private readonly cap: number) {}
  /** blocks of the chain held from the start, then touch/insert the whole chain */
  serve(chain: readonly string[]): number {
    let hit = 0;
    while (hit < chain.length && this.lru.has(chain[hit])) hit++;
    for (let i = chain.length - 1; i >= 0; i--) {
      this.lru.delete(chain[i]);
      this.lru.set(chain[i], true);
    }
    while (this.lru.size > this.cap) this.lru.delete(this.lru.keys().next().value!);
    return hit;
  }
}

export function simulateFleet(
  policyName: string,
  o: FleetSimOptions,
): { hitRate: number; maxInFlight: number; stats?: object } {
  let s = o.seed >>> 0;
  const rand = (): number => (s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32;
  const policy = createPolicy(policyName);
  const ws: WorkerView[] = makeWorkers(o.workers, { kvTokens: o.capacityTokens });
  const caches = ws.map(() => new TrueCache(Math.floor(o.capacityTokens / 16)));
  const tokens = Array.from({ length: o.sessions }, (_, k) => {
    const out: number[] = [];
    for (let i = 0; i < o.rootTokens; i++) out.push(100 + (i % 900));
    for (let i = 0; i < o.turns * o.turnTokens; i++) out.push(1000 + ((k * 7919 + i * 31) % 100_000));
    return out;
  });
  const hashes = tokens.map((t) => blockHashes(t, 16));
  const texts = tokens.map((t) => t.map((x) => String.fromCharCode(0x4e00 + (x % 20000))).join(''));
  const turn = new Array<number>(o.sessions).fill(0);
  const inflight: Array<{ session: number; worker: WorkerView; info: RouteInfo; len: number }> = [];
  let prompt = 0;
  let cached = 0;
  let maxInFlight = 0;
  const busy = new Set<number>();
  const finish = (k: number): void => {
    const r = inflight[k];
    inflight.splice(k, 1);
    busy.delete(r.session);
    r.worker.inFlight--;
    const idx = ws.indexOf(r.worker);
    const hit = caches[idx].serve(r.info.blockHashes!) * 16;
    prompt += r.len;
    cached += Math.min(hit, r.len);
    policy.observe?.({ workerId: r.worker.id, info: r.info, ok: true, reportedCachedTokens: hit, promptTokens: r.len });
  };
  let remaining = o.sessions * o.turns;
  while (remaining > 0 || inflight.length > 0) {
    if (remaining > 0 && inflight.length < o.concurrency) {
      const free = [...Array(o.sessions).keys()].filter((k) => !busy.has(k) && turn[k] < o.turns);
      if (free.length > 0) {
        const k = free[Math.floor(rand() * free.length)];
        const len = o.rootTokens + (turn[k] + 1) * o.turnTokens;
        turn[k]++;
        remaining--;
        const info: RouteInfo = {
          model: 'm',
          tenant: 't',
          sessionId: o.withSessionIds ? `s${k}` : undefined,
          promptTokenIds: tokens[k].slice(0, len),
          blockHashes: hashes[k].slice(0, len / 16),
          text: texts[k].slice(0, len),
          promptTokens: len,
        };
        const c = policy.select(ws, info)!;
        c.worker.inFlight++;
        maxInFlight = Math.max(maxInFlight, c.worker.inFlight);
        busy.add(k);
        inflight.push({ session: k, worker: c.worker, info, len });
        continue;
      }
    }
    finish(Math.floor(rand() * inflight.length));
  }
  return { hitRate: cached / prompt, maxInFlight, stats: policy.stats?.() };
}
