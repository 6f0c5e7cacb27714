// ctxgate's counters for stats(): each worker's routing feedback (cached tokens predicted at the
// decision vs reported by the worker, index corrections) and the shape stats() returns. O(1) per call.
import type { PrefixIndex } from '../prefix-index.ts';

export interface WorkerFeedbackStats {
  calls: number;
  predictedTokens: number;
  reportedTokens: number;
  corrections: number;
  correctedBlocks: number;
}

export interface CtxgateStats {
  index: ReturnType<PrefixIndex['stats']>;
  sessions: number;
  sharedBlocksTracked: number;
  branches: Record<string, number>;
  feedback: Record<string, WorkerFeedbackStats>;
}

/** The counters of worker `id` in `byWorker`, created at zero on its first feedback. */
export function feedbackStatsOf(byWorker: Map<string, WorkerFeedbackStats>, id: string): WorkerFeedbackStats {
  let s = byWorker.get(id);
  if (!s) {
    s = { calls: 0, predictedTokens: 0, reportedTokens: 0, corrections: 0, correctedBlocks: 0 };
    byWorker.set(id, s);
  }
  return s;
}
