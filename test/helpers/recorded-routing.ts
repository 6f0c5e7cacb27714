// A seeded routing stream whose every ctxgate decision (worker, branch, predicted cached tokens)
// is recorded: the same stream through two trees must give the same lines, so speed work on the
// policy can be checked against decisions recorded before it (test/kvplanner/ctxgate-recorded).
// The stream: conversations growing over a shared root, forks, calls without a session, new
// sessions, requests piling up on workers (load bound, detours, moves), scraped queue and KV
// signals, feedback with failures and short reports; with a precise index also engine events
// (stored chains, removed blocks, workers falling out of step and back).
import type { CtxgatePolicy } from '../../kvplanner/policies/ctxgate.ts';
import type { KvEventIndex } from '../../kvplanner/kv-events/event-index.ts';
import type { PolicyOptions, WorkerView } from '../../kvplanner/types.ts';
import { nextChain, rng } from './chain-stream.ts';
import { chainInfo } from './lockstep-steps.ts';

export const RECORDED_WORKERS = 40;
export const RECORDED_STEPS = 4000;
const BLOCK = 16;

/** The policy and index classes of the tree under test (another tree's, to record a fixture). */
export interface RoutingTree {
  CtxgatePolicy: new (opts?: PolicyOptions) => CtxgatePolicy;
  KvEventIndex: new () => KvEventIndex;
}

export type RecordedIndex = 'approx' | 'precise';

/** One line per request: `worker branch predicted`, or `-` when nothing was chosen. */
export function recordDecisions(tree: RoutingTree, mode: RecordedIndex, seed = 20_261_203): string[] {
  const r = rng(seed);
  const events = mode === 'precise' ? new tree.KvEventIndex() : undefined;
  const policy = new tree.CtxgatePolicy(
    events ? { kv_index: events, index_stride: 1, block_size: BLOCK } : { block_size: BLOCK, kv_pressure_s: 2 },
  );
  const root = Array.from({ length: 12 }, (_, i) => `root-${i}`);
  const convs: string[][] = [];
  const load = Array.from({ length: RECORDED_WORKERS }, () => ({ inFlight: 0, queued: 0, waiting: 0, kv: 0 }));
  const live: Array<{ w: number; info: ReturnType<typeof chainInfo>; predicted: number }> = [];
  const lines: string[] = [];
  for (let step = 0; step < RECORDED_STEPS; step++) {
    if (events) {
      const ev = r();
      const wid = `w${Math.floor(r() * RECORDED_WORKERS)}`;
      if (ev < 0.08 && convs.length > 0) {
        const c = convs[Math.floor(r() * convs.length)];
        events.blockRemoved(
          wid,
          c.filter(() => r() < 0.3),
        );
      } else if (ev < 0.09) events.guess(wid, 256);
      else if (ev < 0.1) events.precise(wid, convs.length > 0 ? convs[Math.floor(r() * convs.length)] : root);
    }
    // scraped signals now and then (a worker's engine queue and KV use)
    if (r() < 0.05) {
      const w = load[Math.floor(r() * RECORDED_WORKERS)];
      w.waiting = Math.floor(r() * 6);
      w.kv = r();
    }
    const { chain, session } = nextChain(r, convs, root, step, {
      continues: 0.7,
      growMin: 1,
      growSpan: 8,
      freshSpan: 12,
    });
    const info = chainInfo(chain, session, step, r, BLOCK);
    const ids = Array.from({ length: RECORDED_WORKERS }, (_, i) => i).filter(() => r() < 0.95);
    for (let i = ids.length - 1; i > 0; i--) {
      const j = Math.floor(r() * (i + 1));
      [ids[i], ids[j]] = [ids[j], ids[i]];
    }
    const views: WorkerView[] = ids.map((i) => ({
      id: `w${i}`,
      url: `http://w${i}`,
      healthy: true,
      inFlight: load[i].inFlight,
      queuedPrefillTokens: load[i].queued,
      maxInFlight: i % 7 === 0 ? 6 : 0,
      kvTokens: 8192,
      engine: load[i].waiting || load[i].kv ? { waiting: load[i].waiting, kvUsage: load[i].kv } : undefined,
    }));
    const c = policy.select(views, info);
    if (!c) {
      lines.push('-');
      continue;
    }
    lines.push(`${c.worker.id} ${c.branch} ${c.predictedCachedTokens}`);
    const w = Number(c.worker.id.slice(1));
    load[w].inFlight++;
    load[w].queued += (info.promptTokens ?? 0) - (c.predictedCachedTokens ?? 0);
    if (events && !events.guessed(c.worker.id)) events.blockStored(c.worker.id, chain);
    live.push({ w, info, predicted: c.predictedCachedTokens ?? 0 });
    // requests finish in a random order, fewer than arrive while the stream is young (load builds)
    const finishing = live.length > 3 * RECORDED_WORKERS ? 2 : r() < 0.8 ? 1 : 0;
    for (let k = 0; k < finishing && live.length > 0; k++) {
      const j = Math.floor(r() * live.length);
      const done = live[j];
      live[j] = live[live.length - 1];
      live.pop();
      const ok = r() < 0.93;
      const reported = r() < 0.85 ? done.predicted : Math.floor(r() * done.predicted);
      policy.observe({ workerId: `w${done.w}`, info: done.info, ok, reportedCachedTokens: ok ? reported : undefined });
      load[done.w].inFlight--;
      load[done.w].queued = Math.max(0, load[done.w].queued - 1500);
    }
  }
  return lines;
}

/** Decisions per branch (the stream must reach every branch to be worth recording). */
export function branchCounts(lines: readonly string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const l of lines) {
    const b = l.split(' ')[1] ?? '-';
    out[b] = (out[b] ?? 0) + 1;
  }
  return out;
}
