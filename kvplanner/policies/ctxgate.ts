// ctxgate: route each call to the worker with the lowest expected time to first token,
//   TTFT(w) = queued prefill tokens(w) / tps(w) + prefill(miss tokens on w) + in-flight penalty,
// where the miss tokens are the prompt blocks the prefix index says w does not hold, under a
// bounded load (no worker above ceil((1+ε)·(in-flight+1)/n), Mirrokni et al.). Branches:
//   sticky        the session's worker still has room → keep it (its cache holds the conversation)
//   overflow      the session's (or best-matching) worker is full → lowest TTFT among the rest
//   prefix_match  no session pin, but one worker holds a part of this prompt that is not the
//                 common root (≥ min_unique_blocks beyond what is shared) → that worker
//   new_session   new session → the worker with the least live sessions per KV capacity
//                 (ties: lowest TTFT). A hot shared root thus gets replicated onto every worker
//                 instead of pulling all sessions onto the first worker that cached it.
//   balance       no session, nothing unique cached → lowest TTFT
// Prefill model: miss/tps · (1 + (cached + miss/2)/(3·d)) with the attention term only when
// hidden_size d is set (from 24·M·L·d² + 4·M²·L·d, DESIGN.md §7). Cost per decision: O(n log b)
// index lookups + O(b) index touch for b prompt blocks. Settings: see CTXGATE_DEFAULTS.
import { blockHashes, DEFAULT_BLOCK_SIZE, TEXT_BLOCK_CHARS, textBlockHashes } from '../block-hash.ts';
import { boundedCapacity, hasRoom } from '../hash-ring.ts';
import { PrefixIndex } from '../prefix-index.ts';
import type { PolicyOptions } from '../policy-registry.ts';
import { num, numOrMap } from '../policy-options.ts';
import { SessionAffinity } from '../session-affinity.ts';
import { SharedPrefixTracker } from '../shared-prefix.ts';
import type { Choice, Policy, RouteFeedback, RouteInfo, WorkerView } from '../types.ts';

export const CTXGATE_DEFAULTS = {
  epsilon: 0.25,
  block_size: DEFAULT_BLOCK_SIZE,
  /** prefill throughput per worker, tokens/s (a number, or {workerId: n, default: n}) */
  prefill_tokens_per_s: 10_000,
  /** model hidden size for the attention term; 0 = linear prefill model */
  hidden_size: 0,
  /** expected slowdown per request already running on the worker (shared batch), ms */
  inflight_penalty_ms: 2,
  /** blocks a worker must hold beyond the shared root for prefix_match (4 × 16 = 64 tokens) */
  min_unique_blocks: 4,
  session_ttl_s: 900,
  /** KV capacity in tokens when a worker reports none */
  default_kv_tokens: 1_048_576,
} as const;

export const CTXGATE_BRANCHES = ['sticky', 'overflow', 'prefix_match', 'new_session', 'balance'] as const;
export type CtxgateBranch = (typeof CTXGATE_BRANCHES)[number];

/** Text-only requests: 64-character pseudo-blocks ≈ 16 tokens. */
const TEXT_BLOCK_TOKENS = TEXT_BLOCK_CHARS / 4;

interface Pending {
  workerId: string;
  hashes: readonly string[];
  blockTokens: number;
  predicted: number;
}

interface WorkerFeedbackStats {
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

export class CtxgatePolicy implements Policy {
  readonly name = 'ctxgate';
  readonly index: PrefixIndex;
  readonly affinity: SessionAffinity;
  readonly shared = new SharedPrefixTracker();
  private readonly epsilon: number;
  private readonly blockSize: number;
  private readonly tps: (id: string) => number;
  private readonly hidden: number;
  private readonly inflightPenaltyS: number;
  private readonly minUnique: number;
  private readonly pending = new WeakMap<RouteInfo, Pending>();
  private readonly branches: Record<string, number> = Object.fromEntries(CTXGATE_BRANCHES.map((b) => [b, 0]));
  private readonly feedback = new Map<string, WorkerFeedbackStats>();
  private rot = 0;
  private readonly missListeners: Array<(key: string) => void> = [];

  constructor(opts: PolicyOptions = {}) {
    const d = CTXGATE_DEFAULTS;
    this.epsilon = num(opts, 'epsilon', d.epsilon, 0);
    this.blockSize = num(opts, 'block_size', d.block_size, 1);
    this.tps = numOrMap(opts, 'prefill_tokens_per_s', d.prefill_tokens_per_s);
    this.hidden = num(opts, 'hidden_size', d.hidden_size, 0);
    this.inflightPenaltyS = num(opts, 'inflight_penalty_ms', d.inflight_penalty_ms, 0) / 1000;
    this.minUnique = num(opts, 'min_unique_blocks', d.min_unique_blocks, 1);
    this.index = new PrefixIndex(Math.floor(num(opts, 'default_kv_tokens', d.default_kv_tokens, 1) / this.blockSize));
    this.affinity = new SessionAffinity(num(opts, 'session_ttl_s', d.session_ttl_s, 1) * 1000);
  }

  /** Prompt chain and tokens per block: given hashes, else from token ids, else from text. */
  private chain(info: RouteInfo): { hashes: readonly string[]; blockTokens: number; promptTokens: number } {
    if (info.blockHashes) {
      return { hashes: info.blockHashes, blockTokens: this.blockSize, promptTokens: info.promptTokens ?? info.promptTokenIds?.length ?? info.blockHashes.length * this.blockSize };
    }
    if (info.promptTokenIds) {
      return { hashes: blockHashes(info.promptTokenIds, this.blockSize, info.model), blockTokens: this.blockSize, promptTokens: info.promptTokens ?? info.promptTokenIds.length };
    }
    const text = info.text ?? '';
    return { hashes: textBlockHashes(text, TEXT_BLOCK_CHARS, info.model), blockTokens: TEXT_BLOCK_TOKENS, promptTokens: info.promptTokens ?? Math.ceil(text.length / 4) };
  }

  /** Expected seconds to first token on `w` if it already holds `cached` of `prompt` tokens. */
  ttft(w: WorkerView, prompt: number, cached: number): number {
    const tps = this.tps(w.id);
    const miss = Math.max(0, prompt - cached);
    const attn = this.hidden > 0 ? 1 + (cached + miss / 2) / (3 * this.hidden) : 1;
    return w.queuedPrefillTokens / tps + (miss * attn) / tps + w.inFlight * this.inflightPenaltyS;
  }

  select(workers: readonly WorkerView[], info: RouteInfo): Choice | null {
    const n = workers.length;
    if (n === 0) return null;
    const now = Date.now();
    const { hashes, blockTokens, promptTokens } = this.chain(info);
    const cap = boundedCapacity(workers, this.epsilon);
    const depth = new Array<number>(n);
    for (let i = 0; i < n; i++) {
      const w = workers[i];
      if (w.kvTokens && w.kvTokens > 0) this.index.setCapacity(w.id, w.kvTokens / this.blockSize);
      depth[i] = this.index.matchLength(w.id, hashes);
    }
    const cached = (i: number): number => Math.min(depth[i] * blockTokens, promptTokens);
    const start = this.rot++ % n;
    /** lowest TTFT among workers with room (all workers when none has room) */
    const fastest = (): number => {
      let best = -1;
      let bestT = Infinity;
      for (const roomOnly of [true, false]) {
        for (let k = 0; k < n; k++) {
          const i = (start + k) % n;
          if (roomOnly && !hasRoom(workers[i], cap)) continue;
          const t = this.ttft(workers[i], promptTokens, cached(i));
          if (t < bestT) {
            best = i;
            bestT = t;
          }
        }
        if (best >= 0) return best;
      }
      return start;
    };

    const key = info.sessionId ? `${info.tenant}\u0000${info.sessionId}` : undefined;
    const pinned = key ? this.affinity.get(key, now) : undefined;
    if (key && pinned === undefined) for (const l of this.missListeners) l(key);
    const pinnedIdx = pinned === undefined ? -1 : workers.findIndex((w) => w.id === pinned);
    let idx: number;
    let branch: CtxgateBranch;
    if (pinnedIdx >= 0) {
      if (hasRoom(workers[pinnedIdx], cap)) [idx, branch] = [pinnedIdx, 'sticky'];
      else [idx, branch] = [fastest(), 'overflow'];
    } else {
      let best = 0;
      let second = 0;
      for (let i = 1; i < n; i++) if (depth[i] > depth[best]) best = i;
      for (let i = 0; i < n; i++) if (i !== best && depth[i] > second) second = depth[i];
      // what other prompts share is no reason to follow this one: every worker can cache a root
      const common = Math.max(second, depth[best] > second ? this.shared.commonDepth(hashes, depth[best]) : 0);
      if (depth[best] - common >= this.minUnique) {
        if (hasRoom(workers[best], cap)) [idx, branch] = [best, 'prefix_match'];
        else [idx, branch] = [fastest(), 'overflow'];
      } else if (key) [idx, branch] = [this.leastSessions(workers, cap, start, promptTokens, cached), 'new_session'];
      else [idx, branch] = [fastest(), 'balance'];
    }

    const worker = workers[idx];
    const predicted = cached(idx);
    this.index.insert(worker.id, hashes);
    this.shared.insert(hashes);
    if (key) this.affinity.assign(key, worker.id, promptTokens, now);
    // keyed by the RouteInfo object the gateway hands back in observe(); collected with it
    this.pending.set(info, { workerId: worker.id, hashes, blockTokens, predicted });
    this.branches[branch]++;
    return { worker, branch, predictedCachedTokens: predicted };
  }

  /** new_session: fewest live sessions per KV capacity among workers with room; ties → their
   *  tokens per capacity, then TTFT. */
  private leastSessions(workers: readonly WorkerView[], cap: number, start: number, prompt: number, cached: (i: number) => number): number {
    let best = -1;
    let bestKey: [number, number, number] = [Infinity, Infinity, Infinity];
    for (let k = 0; k < workers.length; k++) {
      const i = (start + k) % workers.length;
      const w = workers[i];
      if (!hasRoom(w, cap)) continue;
      const capTokens = Math.max(1, this.index.capacity(w.id) * this.blockSize);
      const l = this.affinity.load(w.id);
      const key: [number, number, number] = [l.sessions / capTokens, l.tokens / capTokens, this.ttft(w, prompt, cached(i))];
      if (key[0] < bestKey[0] || (key[0] === bestKey[0] && (key[1] < bestKey[1] || (key[1] === bestKey[1] && key[2] < bestKey[2])))) {
        best = i;
        bestKey = key;
      }
    }
    return best >= 0 ? best : start;
  }

  /** Called (synchronously, must not throw) when a session key has no pin here: replica sync. */
  onSessionMiss(fn: (key: string) => void): void {
    this.missListeners.push(fn);
  }

  observe(fb: RouteFeedback): void {
    const p = this.pending.get(fb.info);
    if (p) this.pending.delete(fb.info);
    const workerId = p?.workerId ?? fb.workerId;
    const hashes = p?.hashes ?? fb.info.blockHashes ?? [];
    const blockTokens = p?.blockTokens ?? this.blockSize;
    const predicted = p?.predicted ?? fb.predictedCachedTokens;
    if (predicted === undefined) return;
    const predBlocks = Math.floor(predicted / blockTokens);
    if (!fb.ok) {
      // the optimistic insert of this prompt's new blocks did not happen
      this.index.evict(workerId, hashes.slice(predBlocks));
      return;
    }
    if (fb.reportedCachedTokens === undefined) return;
    const s = this.feedbackStats(workerId);
    s.calls++;
    s.predictedTokens += predicted;
    s.reportedTokens += fb.reportedCachedTokens;
    const reportedBlocks = Math.floor(fb.reportedCachedTokens / blockTokens);
    // one block of slack: vLLM recomputes the last token of a fully cached prompt. Everything from
    // the first missing block on goes, so held blocks stay a prefix of the chain.
    if (reportedBlocks < predBlocks - 1) {
      s.corrections++;
      s.correctedBlocks += this.index.evict(workerId, hashes.slice(reportedBlocks));
    }
  }

  private feedbackStats(id: string): WorkerFeedbackStats {
    let s = this.feedback.get(id);
    if (!s) {
      s = { calls: 0, predictedTokens: 0, reportedTokens: 0, corrections: 0, correctedBlocks: 0 };
      this.feedback.set(id, s);
    }
    return s;
  }

  stats(): CtxgateStats {
    return {
      index: this.index.stats(),
      sessions: this.affinity.size,
      sharedBlocksTracked: this.shared.size,
      branches: { ...this.branches },
      feedback: Object.fromEntries([...this.feedback].map(([k, v]) => [k, { ...v }])),
    };
  }
}
