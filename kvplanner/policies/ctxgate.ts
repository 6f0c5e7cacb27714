// ctxgate: route each call to the worker with the lowest expected time to first token,
//   TTFT(w) = queued prefill tokens(w) / tps(w) + prefill(miss tokens on w) + in-flight penalty
//             + KV wait: when the scraped KV usage plus what is queued and this prompt's miss
//               exceed the worker's KV, kv_pressure_s per cache's worth of excess (vLLM admits a
//               prompt only once all its blocks are free, so it waits for running requests),
// where the miss tokens are the prompt blocks the prefix index says w does not hold, under a
// bounded load (no worker above (1+ε)·mean + 1 in flight, after Mirrokni et al.; a session's
// home up to sticky_slack more) and, for a session's home and a new session's, a bound in time:
// no expected start later than (1+ε)·the fastest worker's + one prefill of the prompt there (a
// worker prefilling another tenant's 240k-token prompt has one request in flight, room by count,
// and 24 s of work before this call). Branches:
//   sticky        the session's worker still has room and starts the call within the bound in
//                 time → keep it (its cache holds the conversation)
//                 It stays there up to sticky_slack requests past the bound while it is still
//                 the faster start (the detour re-prefills the conversation; a few extra
//                 requests hardly queue on a batching engine).
//   overflow      the session's (or best-matching) worker is full → lowest TTFT among the rest;
//                 the session stays pinned to its home (a detour, not a move)
//   migrate       as overflow, but the target already holds ≥ half of what the home holds of
//                 this conversation (an earlier detour): the pin moves instead of bouncing
//   prefix_match  no session pin, but one worker holds a part of this prompt that is not common
//                 (≥ min_unique_tokens beyond the runner-up worker's depth; for a new session
//                 also beyond a root other prompts branch from) → that worker
//   new_session   new session → among the workers within the bound in time, the one with the
//                 least live sessions per KV capacity (ties: lowest TTFT). A hot shared root
//                 thus gets replicated onto every worker instead of pulling all sessions onto
//                 the first worker that cached it.
//   balance       no session, nothing unique cached → lowest TTFT (ties: emptiest index)
// For a new session a shared root (blocks two prompts share) counts as cached on every worker;
// a call without a session counts only what the runner-up worker holds as common: the prefix two
// prompts share may be a conversation's history, held only where its turns went (Mooncake's
// conversation trace: following it there lifted the hit rate from 6.0 to 6.6 % at ×1). select() records the chain on the chosen worker (engines cache while they prefill, and
// the next turn may come before this one ends); observe() (after the response) evicts what the
// worker turned out not to hold (only for a worker that has never served a hit: one that
// caches recomputed the missing blocks for this call and holds the whole chain again), or what
// a failed call alone added (not what another request routed there meanwhile runs through:
// pending-claims.ts). The approximate index remembers index_capacity_factor × the worker's KV:
// chains of requests still queued or running (minutes under load) are pinned in the engine.
// With a precise index (option kv_index, fed by engine KV events) routing only reads it, except
// for a worker whose events are not in step (KvEventIndex.guessed): that entry is kept as without
// events. Without block hashes the chain comes from token ids (hashed in ctxgate-chain.ts) or, last, from
// 64-character text chunks (O(text) SHA-256).
// Prefill model: miss/tps · (1 + (cached + miss/2)/(3·d)) with the attention term only when
// hidden_size d is set (from 24·M·L·d² + 4·M²·L·d, docs/architecture.md, "Cost arithmetic"). The index keeps every
// index_stride-th block hash (64-token resolution). Cost per decision: sticky O(n) reads of
// in-flight counts (the load bound) and 2–3 index lookups when the home holds the session's
// previous prompt (else O(log b)), plus O(n) start estimates when the home's own exceeds one
// prefill of the prompt (the other branches' cost when that does not settle it); other branches
// add O(n) over workers and O(k log b) index lookups (PrefixIndex.matchAll); observe()
// O(log b + new blocks). An unpinned pick's chain enters the shared-prefix tracker after the
// decision (ctxgate-shared.ts: before the tracker's next read or write, or in observe()); with
// RouteInfo.sent its index insert waits for the request's send (deferred-work.ts postpone: done
// first by whatever uses the index next, so every read sees it; a precise index: as before).
// Settings: CTXGATE_DEFAULTS, and how they were chosen: ctxgate-defaults.ts.
import { hasRoom, slackCapacity } from '../hash-ring.ts';
import { type KvEventIndex, preciseIndexOption } from '../kv-events/event-index.ts';
import { DeferredWork, type Work } from '../deferred-work.ts';
import { ChainReader } from './ctxgate-chain.ts';
import { CTXGATE_BRANCHES, CTXGATE_DEFAULTS, type CtxgateBranch, MAX_SESSION_TTL_S } from './ctxgate-defaults.ts';
import { PostponedTracker } from './ctxgate-shared.ts';
import { type CtxgateStats, feedbackStatsOf, type WorkerFeedbackStats } from './ctxgate-stats.ts';
import { type Claim, PendingClaims } from '../pending-claims.ts';
import { PrefixIndex } from '../prefix-index.ts';
import { num, numOrMap, PolicyOptionError } from '../policy-options.ts';
import { SessionAffinity } from '../session-affinity.ts';
import type { SharedPrefixTracker } from '../shared-prefix.ts';
import type { Choice, Policy, PolicyOptions, RouteFeedback, RouteInfo, WorkerView } from '../types.ts';

export { CTXGATE_BRANCHES, CTXGATE_DEFAULTS, type CtxgateBranch, MAX_SESSION_TTL_S } from './ctxgate-defaults.ts';
export type { CtxgateStats } from './ctxgate-stats.ts';

/** Prompt tokens assumed for each request a scraped engine reports waiting. */
const WAITING_REQUEST_TOKENS = 1024;
/** Share of the home's cached conversation a detour target must hold for the session to move there. */
const MIGRATE_SHARE = 0.5;
/** Requests in flight whose feedback can still be matched to the pick. */
const MAX_PENDING = 16_384;
/** A pick whose chain adds more index blocks than this (1,024 × 64 tokens) records them in steps
 *  when its caller can defer (RouteInfo.defer); an agent's turn, far shorter, at once as before. */
const DEFER_MIN_BLOCKS = 1024;
/** Index or tracker blocks one deferred step walks (~0.5–1 ms of Map work). */
const DEFER_STEP_BLOCKS = 512;
/** Calls the share of calls without a session id is averaged over (index_queue_factor_no_session). */
const NO_SESSION_WINDOW = 256;

interface Pending extends Claim {
  seq: number;
  blockTokens: number;
  predicted: number;
  /** the pick's last index or tracker work still queued at the decision (deferred-work.ts) */
  recording?: Work;
}

export class CtxgatePolicy implements Policy {
  readonly name = 'ctxgate';
  /** the index itself: read through `index`, which first does a pick's postponed insert */
  private readonly own: PrefixIndex;
  /** engine KV events feed the index (option kv_index): routing only reads it (guessing()) */
  private readonly events: KvEventIndex | undefined;
  readonly affinity: SessionAffinity;
  private readonly epsilon: number;
  private readonly blockSize: number;
  private readonly tps: (id: string) => number;
  private readonly hidden: number;
  private readonly inflightPenaltyS: number;
  private readonly minUniqueTokens: number;
  private readonly stride: number;
  private readonly stickySlack: number;
  private readonly indexFactor: number;
  private readonly indexQueueFactor: number;
  private readonly indexQueueFactorNoSession: number;
  /** share of recent calls without a session id (moving average over ~NO_SESSION_WINDOW calls) */
  private noSessionShare = -1;
  private readonly kvPressureS: number;
  /** picks awaiting feedback, keyed by the RouteInfo object the gateway hands back to observe();
   *  bounded by a ring of the last MAX_PENDING picks (a WeakMap would make every GC walk an
   *  ephemeron table; evicting through Map iteration would walk the holes deletes leave) */
  private readonly pending = new Map<RouteInfo, Pending>();
  private readonly pendingRing = new Array<RouteInfo | undefined>(MAX_PENDING);
  /** what each pending pick alone added to a guessed entry (a failed one takes back only that) */
  private readonly claims = new PendingClaims();
  private pendingSeq = 0;
  private readonly branches: Record<string, number> = Object.fromEntries(CTXGATE_BRANCHES.map((b) => [b, 0]));
  private readonly feedback = new Map<string, WorkerFeedbackStats>();
  private rot = 0;
  /** scratch for PrefixIndex.matchAll, indexed by worker slot */
  private bySlot: number[] = [];
  private readonly slots: number[] = [];
  private readonly depth: number[] = [];
  /** each index slot's worker number in the affinity (-1: not looked up yet); leastSessions' scratch */
  private affOfSlot = new Int32Array(0);
  private readonly nums: number[] = [];
  /** prompts' chains as the index keeps them (ctxgate-chain.ts) */
  private readonly chains: ChainReader;
  /** scratch for leastSessions: each worker's expected start */
  private readonly starts: number[] = [];
  private readonly missListeners: Array<(key: string) => void> = [];
  /** worker id → position in the last worker list seen (positionOf) */
  private readonly positions = new Map<string, number>();
  /** index and tracker work of long chains, in steps when the caller can defer (deferred-work.ts) */
  private readonly later = new DeferredWork(DEFER_MIN_BLOCKS, DEFER_STEP_BLOCKS);
  /** the shared-prefix tracker, an unpinned pick's chain recorded after the decision (ctxgate-shared.ts) */
  private readonly postponed = new PostponedTracker(this.later, DEFER_MIN_BLOCKS);

  constructor(opts: PolicyOptions = {}) {
    const d = CTXGATE_DEFAULTS;
    const flavor = opts.engine_flavor;
    if (flavor !== undefined && flavor !== 'vllm' && flavor !== 'sglang' && flavor !== 'openai')
      throw new PolicyOptionError('engine_flavor', 'must be vllm, sglang or openai', flavor);
    this.epsilon = num(opts, 'epsilon', flavor === 'sglang' ? d.epsilon_sglang : d.epsilon, 0);
    this.blockSize = num(opts, 'block_size', d.block_size, 1);
    this.tps = numOrMap(opts, 'prefill_tokens_per_s', d.prefill_tokens_per_s);
    this.hidden = num(opts, 'hidden_size', d.hidden_size, 0);
    this.inflightPenaltyS = num(opts, 'inflight_penalty_ms', d.inflight_penalty_ms, 0) / 1000;
    this.minUniqueTokens = num(opts, 'min_unique_tokens', d.min_unique_tokens, 1);
    this.stride = Math.floor(num(opts, 'index_stride', d.index_stride, 1, 64));
    this.stickySlack = Math.floor(num(opts, 'sticky_slack', d.sticky_slack, 0));
    this.kvPressureS = num(opts, 'kv_pressure_s', d.kv_pressure_s, 0);
    this.indexFactor = num(
      opts,
      'index_capacity_factor',
      flavor === 'sglang' ? d.index_capacity_factor_sglang : d.index_capacity_factor,
      1,
      64,
    );
    this.indexQueueFactor = num(opts, 'index_queue_factor', d.index_queue_factor, 0, 64);
    this.indexQueueFactorNoSession = num(opts, 'index_queue_factor_no_session', d.index_queue_factor_no_session, 0, 64);
    const events = preciseIndexOption(opts);
    if (events && this.stride !== 1)
      throw new Error("routing option 'index_stride' must be 1 with a precise (KV event) index");
    this.events = events;
    this.own =
      events?.index ??
      new PrefixIndex(
        Math.floor(num(opts, 'default_kv_tokens', d.default_kv_tokens, 1) / (this.blockSize * this.stride)),
      );
    this.chains = new ChainReader(this.blockSize, this.stride);
    this.affinity = new SessionAffinity(num(opts, 'session_ttl_s', d.session_ttl_s, 1, MAX_SESSION_TTL_S) * 1000);
  }

  /** Expected seconds to first token on `w` if it already holds `cached` of `prompt` tokens. */
  ttft(w: WorkerView, prompt: number, cached: number): number {
    // the engine's own queue (scraped) also holds other gateways' requests: take the larger view
    return this.startSeconds(
      w,
      prompt,
      cached,
      Math.max(w.queuedPrefillTokens, (w.engine?.waiting ?? 0) * WAITING_REQUEST_TOKENS),
    );
  }

  private startSeconds(w: WorkerView, prompt: number, cached: number, queued: number): number {
    const tps = this.tps(w.id);
    const miss = Math.max(0, prompt - cached);
    const attn = this.hidden > 0 ? 1 + (cached + miss / 2) / (3 * this.hidden) : 1;
    const base = queued / tps + (miss * attn) / tps + w.inFlight * this.inflightPenaltyS;
    const usage = w.engine?.kvUsage;
    if (this.kvPressureS === 0 || usage === undefined || !w.kvTokens) return base;
    const over = usage + (queued + miss) / w.kvTokens - 1;
    return over > 0 ? base + over * this.kvPressureS : base;
  }

  select(workers: readonly WorkerView[], info: RouteInfo): Choice | null {
    const n = workers.length;
    if (n === 0) return null;
    const now = info.nowMs ?? Date.now();
    const { hashes, keys, blockTokens, promptTokens } = this.chains.read(info);
    const cap = slackCapacity(workers, this.epsilon);
    const start = this.rot++ % n;
    const key = info.sessionId ? `${info.tenant}\u0000${info.sessionId}` : undefined;
    const noSession = key === undefined ? 1 : 0;
    this.noSessionShare =
      this.noSessionShare < 0 ? noSession : this.noSessionShare + (noSession - this.noSessionShare) / NO_SESSION_WINDOW;
    const pin = key ? this.affinity.entry(key, now) : undefined;
    const pinned = pin?.worker;
    if (key && pinned === undefined) for (const l of this.missListeners) l(key);
    const pinnedIdx = pinned === undefined ? -1 : this.positionOf(workers, pinned);

    let idx: number;
    let branch: CtxgateBranch;
    let held: number;
    let homeHeld = -1;
    let recording: Work | undefined;
    if (pinnedIdx >= 0 && hasRoom(workers[pinnedIdx], cap)) {
      const w = workers[pinnedIdx];
      if (this.guessing(w.id)) this.index.prepare(w.id, this.indexBlocks(w, blockTokens));
      // the session's previous prompt is most likely what its home holds: two lookups, not log b
      homeHeld = this.index.matchLength(w.id, hashes, Math.floor(pin!.tokens / blockTokens), keys);
    }
    // the common case stays O(log n): only the pinned worker's depth is needed, unless the home's
    // queued prefill work (another session's huge prompt) makes it start later than the bound in time
    if (homeHeld >= 0 && this.startsInTime(workers, pinnedIdx, promptTokens, homeHeld * blockTokens)) {
      idx = pinnedIdx;
      branch = 'sticky';
      held = homeHeld;
    } else {
      const depth = this.depths(workers, hashes, blockTokens, keys);
      if (pinnedIdx >= 0) {
        idx = this.fastest(workers, cap, start, promptTokens, blockTokens, 0);
        // a home that stays over the bound would bounce the session between two caches, paying
        // each one's missing tail every trip: once a detour target already holds most of what
        // the home holds (an earlier detour put it there), the session moves instead
        // (movable() reads the shared-prefix tracker, ~log b cold lookups: only for a real detour)
        if (idx === pinnedIdx) branch = 'sticky';
        else if (
          this.worthStaying(
            workers[pinnedIdx],
            workers[idx],
            cap,
            promptTokens,
            depth[pinnedIdx] * blockTokens,
            depth[idx] * blockTokens,
            homeHeld >= 0,
          )
        ) {
          idx = pinnedIdx;
          branch = 'sticky';
        } else branch = this.movable(depth[idx], depth[pinnedIdx], hashes, blockTokens) ? 'migrate' : 'overflow';
      } else {
        let best = 0;
        let second = 0;
        for (let i = 1; i < n; i++) if (depth[i] > depth[best]) best = i;
        for (let i = 0; i < n; i++) if (i !== best && depth[i] > second) second = depth[i];
        // what other workers hold too is no reason to follow this one. A new session also treats
        // a prefix other prompts branch from as common (a root every worker caches after one
        // call: its home is chosen by session count, not by who cached the root first). A call
        // without a session has no home to come back to: the index is the only way its
        // conversation's next turn finds its cache, and a prefix two prompts share (a
        // conversation's history that two later turns extend differently) is held only where
        // they went, so for it only the runner-up's depth counts as common.
        const common = Math.max(second, key && depth[best] > second ? this.shared.commonDepth(hashes, depth[best]) : 0);
        if ((depth[best] - common) * blockTokens >= this.minUniqueTokens) {
          const room = hasRoom(workers[best], cap);
          idx = room ? best : this.fastest(workers, cap, start, promptTokens, blockTokens, 0);
          branch = room ? 'prefix_match' : 'overflow';
        } else if (key) {
          // a shared root counts as cached everywhere: any worker caches it after one call, so
          // it must not pull every new conversation onto the first worker that holds it
          idx = this.leastSessions(workers, cap, start, promptTokens, blockTokens, common);
          branch = 'new_session';
        } else {
          idx = this.fastest(workers, cap, start, promptTokens, blockTokens, common);
          branch = 'balance';
        }
      }
      held = depth[idx];
      // pinned calls (sticky or a detour) only extend their own chain; branch points between
      // prompts show up on the unpinned paths, the only ones that ask the tracker
      if (pinnedIdx < 0) recording = this.postponed.record(hashes, info.defer);
    }

    const worker = workers[idx];
    const predicted = Math.min(held * blockTokens, promptTokens);
    // the chain goes into the index now, not after the response: the engine caches a prompt's
    // blocks as it prefills them, and the next turn of a conversation (or another request with
    // this prefix) often arrives before this one completes. observe() corrects it from what the
    // worker reports.
    if (this.guessing(worker.id)) {
      const id = worker.id;
      const insert = this.index.inserting(id, hashes, true, held);
      const blocks = hashes.length - held;
      // a worker whose KV events came back in step meanwhile holds what they said: the rest of the guess goes
      if (info.sent && !this.events && (!info.defer || blocks <= DEFER_MIN_BLOCKS))
        this.later.postpone((b) => !this.guessing(id) || insert(b), info.sent);
      else recording = this.later.run((b) => !this.guessing(id) || insert(b), blocks, info.defer) ?? recording;
    }
    // an overflow is a detour: the session keeps its home (and the KV share planned for it there)
    if (key)
      this.affinity.assign(key, branch === 'overflow' && pinned !== undefined ? pinned : worker.id, promptTokens, now);
    const seq = ++this.pendingSeq;
    const slot = seq % MAX_PENDING;
    const old = this.pendingRing[slot];
    const gone = old && this.pending.get(old);
    if (gone && gone.seq === seq - MAX_PENDING) {
      this.pending.delete(old);
      this.claims.release(gone);
    }
    this.pendingRing[slot] = info;
    const pick: Pending = { workerId: worker.id, held, hashes, blockTokens, predicted, seq, kept: 0, recording };
    if (this.guessing(worker.id)) this.claims.pick(pick);
    this.pending.set(info, pick);
    this.branches[branch]++;
    return { worker, branch, predictedCachedTokens: predicted };
  }

  /** The prefix index, with every chain picked so far recorded (a pick's insert may wait for its
   *  send: deferred-work.ts postpone). */
  get index(): PrefixIndex {
    this.later.settleSoon();
    return this.own;
  }

  /** The shared-prefix tracker, with every chain picked so far recorded. */
  get shared(): SharedPrefixTracker {
    return this.postponed.shared;
  }

  /** Index of worker `id` in `workers`, -1 if absent: O(1) while the gateway passes the same
   *  list (a map rebuilt when a lookup misses), instead of comparing ids across the fleet. */
  private positionOf(workers: readonly WorkerView[], id: string): number {
    const i = this.positions.get(id);
    if (i !== undefined && workers[i]?.id === id) return i;
    this.positions.clear();
    for (let k = 0; k < workers.length; k++) this.positions.set(workers[k].id, k);
    return this.positions.get(id) ?? -1;
  }

  /**
   * A home over the bound keeps its session while it is within sticky_slack more requests and
   * still the faster place to start: few requests in flight hardly queue on a batching engine,
   * while the detour re-prefills the whole conversation. O(1).
   */
  private worthStaying(
    home: WorkerView,
    alt: WorkerView,
    cap: number,
    prompt: number,
    homeHeld: number,
    altHeld: number,
    homeHasRoom: boolean,
  ): boolean {
    const homeT = this.ttft(home, prompt, Math.min(homeHeld, prompt));
    const inTime = homeT <= this.tolerated(home, prompt, this.ttft(alt, prompt, Math.min(altHeld, prompt)));
    // within the bound in requests, the bound in time decides (startsInTime found it over that)
    if (homeHasRoom) return inTime;
    if (this.stickySlack === 0 || !hasRoom(home, cap + this.stickySlack) || !inTime) return false;
    // past the bound in requests, the home must also be the faster start by what its engine
    // reports: a few requests more hardly queue on a batching engine, a reported queue does
    return this.scrapedStart(home, prompt, homeHeld) <= this.scrapedStart(alt, prompt, altHeld);
  }

  /**
   * The load bound in time: the latest expected start tolerated on `w` when the fastest worker
   * starts at `best` s: (1+ε)·best plus one prefill of this prompt on `w` (the time analogue of the
   * bound's +1 request). The bound in requests alone lets a worker take a small call while it
   * prefills another tenant's 240k-token prompt (one request in flight), and the call waits for it.
   */
  private tolerated(w: WorkerView, prompt: number, best: number): number {
    return (1 + this.epsilon) * best + prompt / this.tps(w.id);
  }

  /**
   * Whether the session's home (within the bound in requests) starts this call within the bound in
   * time of every other worker. O(1) while the home's expected start is under one prefill of the
   * prompt, else O(n) with each other worker's start as if it held the whole prompt (a lower bound
   * on its real one); false only when that cannot settle it (then the caller compares real starts).
   */
  private startsInTime(workers: readonly WorkerView[], home: number, prompt: number, held: number): boolean {
    const w = workers[home];
    const homeT = this.ttft(w, prompt, Math.min(held, prompt));
    if (homeT <= this.tolerated(w, prompt, 0)) return true;
    let best = Infinity;
    for (let i = 0; i < workers.length; i++)
      if (i !== home) best = Math.min(best, this.ttft(workers[i], prompt, prompt));
    return homeT <= this.tolerated(w, prompt, best);
  }

  /** Start time on `w` counting only the queue its engine reports. A method, not a closure in
   *  worthStaying: tsx keeps function names, so each closure creation cost a defineProperty. */
  private scrapedStart(w: WorkerView, prompt: number, held: number): number {
    return this.startSeconds(w, prompt, Math.min(held, prompt), (w.engine?.waiting ?? 0) * WAITING_REQUEST_TOKENS);
  }

  /** migrate: the detour target holds ≥ min_unique_tokens and ≥ MIGRATE_SHARE of the home's
   *  blocks of this prompt beyond the shared root. O(1) when no root could make it so, else O(log b). */
  private movable(target: number, home: number, hashes: readonly string[], blockTokens: number): boolean {
    // both conditions only get harder as the root deepens (≥ 0 blocks): when even no root at all
    // fails them, as for a target holding only the root while the home holds the conversation
    // (most detours), the answer needs no tracker read. Exact: integer arithmetic, ×0.5.
    if (!this.movableAbove(target, home, 0, blockTokens)) return false;
    return this.movableAbove(target, home, this.shared.sharedDepth(hashes, Math.max(target, home)), blockTokens);
  }

  /** movable()'s test for a shared root of `root` blocks (false for every deeper root once false). */
  private movableAbove(target: number, home: number, root: number, blockTokens: number): boolean {
    const mine = target - root;
    return mine * blockTokens >= this.minUniqueTokens && mine >= MIGRATE_SHARE * (home - root);
  }

  private indexBlocks(w: WorkerView, blockTokens: number): number | undefined {
    if (!w.kvTokens) return undefined;
    const share = Math.max(0, this.noSessionShare);
    const factor = this.indexQueueFactor + (this.indexQueueFactorNoSession - this.indexQueueFactor) * share;
    const remembered = w.kvTokens + factor * w.queuedPrefillTokens;
    return Math.min(w.kvTokens * this.indexFactor, remembered) / blockTokens;
  }

  /** Blocks of `hashes` each worker holds (aligned with `workers`; scratch array, reused). */
  expectedCachedTokens(workers: readonly WorkerView[], info: RouteInfo): number {
    if (workers.length === 0) return 0;
    const { hashes, keys, blockTokens, promptTokens } = this.chains.read(info);
    let sum = 0;
    for (const d of this.depths(workers, hashes, blockTokens, keys, false))
      sum += Math.min(d * blockTokens, promptTokens);
    return sum / workers.length;
  }

  /** Each worker's cached tokens of the prompt (the values expectedCachedTokens([w]) gives), one chain read. */
  cachedTokensEach(workers: readonly WorkerView[], info: RouteInfo, out: number[]): void {
    out.length = workers.length;
    if (workers.length === 0) return;
    const { hashes, keys, blockTokens, promptTokens } = this.chains.read(info);
    const d = this.depths(workers, hashes, blockTokens, keys, false);
    for (let i = 0; i < workers.length; i++) out[i] = Math.min(d[i] * blockTokens, promptTokens);
  }

  /**
   * Each worker's depth of `hashes` (aligned with `workers`; scratch, reused). `apply` (select
   * only): a worker gets its index entry if it has none, and a guessed one its current budget
   * (PrefixIndex.prepare, which may evict). An estimate (the admission gate's, attribution's)
   * passes false and changes nothing: the index is what select and observe made it, whatever
   * and however often anyone reads, so reads cannot move later decisions; a worker without an
   * entry holds nothing, one over its budget is read as it stands (select applies the budget).
   */
  private depths(
    workers: readonly WorkerView[],
    hashes: readonly string[],
    blockTokens: number,
    keys: Int32Array | undefined,
    apply = true,
  ): number[] {
    const n = workers.length;
    const slots = this.slots;
    slots.length = n;
    // with a precise index and every worker's events in step, no worker is guessed: one check
    const anyGuessed = apply && (this.events === undefined || this.events.anyGuessed());
    for (let i = 0; i < n; i++) {
      const w = workers[i];
      // a worker at the position it had last time keeps its slot: one id compare instead of a Map
      // lookup (a guessed worker's entry may need its capacity applied: it goes through prepare)
      const s = slots[i];
      const guessed = anyGuessed && this.guessing(w.id);
      if (s !== undefined && !guessed && this.index.idOfSlot(s) === w.id) continue;
      slots[i] = apply
        ? this.index.prepare(w.id, guessed ? this.indexBlocks(w, blockTokens) : undefined)
        : this.index.slotOf(w.id);
    }
    if (this.bySlot.length < this.index.slotCount()) this.bySlot = new Array<number>(this.index.slotCount()).fill(0);
    this.index.matchAll(hashes, this.bySlot, 0, keys);
    const depth = this.depth;
    depth.length = n;
    // slot -1 (an estimate's worker the index has never seen): nothing held
    for (let i = 0; i < n; i++) depth[i] = slots[i] < 0 ? 0 : this.bySlot[slots[i]];
    return depth;
  }

  /**
   * Lowest expected TTFT among workers with room (all workers when none has room); ties go to the
   * emptier KV index. Depths below `floor` count as `floor` (a shared root). Needs depths().
   */
  private fastest(
    workers: readonly WorkerView[],
    cap: number,
    start: number,
    prompt: number,
    blockTokens: number,
    floor: number,
  ): number {
    const n = workers.length;
    for (let pass = 0; pass < 2; pass++) {
      let best = -1;
      let bestT = Infinity;
      let bestFill = Infinity;
      for (let k = 0; k < n; k++) {
        const i = (start + k) % n;
        const w = workers[i];
        if (pass === 0 && !hasRoom(w, cap)) continue;
        const t = this.ttft(w, prompt, Math.min(Math.max(this.depth[i], floor) * blockTokens, prompt));
        if (t > bestT) continue;
        const fill = this.index.fillOfSlot(this.slots[i]);
        if (t < bestT || fill < bestFill) {
          best = i;
          bestT = t;
          bestFill = fill;
        }
      }
      if (best >= 0) return best;
    }
    return start;
  }

  /** new_session: fewest live sessions per KV capacity among workers with room; ties → their
   *  tokens per capacity, then TTFT. Needs depths(). */
  private leastSessions(
    workers: readonly WorkerView[],
    cap: number,
    start: number,
    prompt: number,
    blockTokens: number,
    floor: number,
  ): number {
    const n = workers.length;
    const t = this.starts;
    t.length = n;
    const nums = this.nums;
    nums.length = n;
    let fastest = Infinity;
    for (let i = 0; i < n; i++) {
      t[i] = this.ttft(workers[i], prompt, Math.min(Math.max(this.depth[i], floor) * blockTokens, prompt));
      if (hasRoom(workers[i], cap)) fastest = Math.min(fastest, t[i]);
      nums[i] = this.affinityNumber(this.slots[i], workers[i].id);
    }
    const sessions = this.affinity.sessions(); // after numberOf (a new number may replace the arrays)
    const tokens = this.affinity.tokens();
    let best = -1;
    let b0 = Infinity;
    let b1 = Infinity;
    let b2 = Infinity;
    for (let k = 0; k < n; k++) {
      const i = (start + k) % n;
      const w = workers[i];
      // the bound in time too: a worker busy prefilling a huge prompt is no home for a new session
      if (!hasRoom(w, cap) || t[i] > this.tolerated(w, prompt, fastest)) continue;
      const slot = this.slots[i];
      const capTokens = Math.max(1, this.index.capacityOfSlot(slot) * blockTokens);
      const k0 = sessions[nums[i]] / capTokens;
      const k1 = tokens[nums[i]] / capTokens;
      const k2 = t[i];
      if (k0 < b0 || (k0 === b0 && (k1 < b1 || (k1 === b1 && k2 < b2)))) {
        best = i;
        b0 = k0;
        b1 = k1;
        b2 = k2;
      }
    }
    return best >= 0 ? best : start;
  }

  /** The affinity's number for index slot `slot`'s worker `id`, kept per slot (slots and numbers
   *  are for life): a typed-array read, not a Map lookup, per worker and decision. */
  private affinityNumber(slot: number, id: string): number {
    let a = this.affOfSlot;
    if (slot < a.length && a[slot] >= 0) return a[slot];
    if (slot >= a.length) {
      a = new Int32Array(Math.max(8, 2 * a.length, slot + 1)).fill(-1);
      a.set(this.affOfSlot);
      this.affOfSlot = a;
    }
    return (a[slot] = this.affinity.numberOf(id));
  }

  /** Called (synchronously, must not throw) when a session key has no pin here: replica sync. */
  onSessionMiss(fn: (key: string) => void): void {
    this.missListeners.push(fn);
  }

  /**
   * After the call: the worker now holds the prompt's chain, unless it reported fewer cached
   * tokens than predicted, which says it lost blocks the index still lists; those (from the first
   * missing one) are evicted instead, so the next prediction for this prefix there is lower.
   */
  observe(fb: RouteFeedback): void {
    this.postponed.flush();
    const p = this.pending.get(fb.info);
    if (p?.recording) this.later.finish(p.recording);
    // a failed call leaves nothing new cached: take back what select() added for it, except what
    // a call answered there, or one still in flight there (which inherits it), runs through
    let from = p ? p.hashes.length : 0;
    if (p) {
      this.pending.delete(fb.info);
      from = this.claims.release(p, !fb.ok);
      // the ring slot would otherwise keep the request (its token ids, its body) alive for the
      // next MAX_PENDING calls: ~25 KB a call on growing sessions, hundreds of MB at the cap
      const slot = p.seq % MAX_PENDING;
      if (this.pendingRing[slot] === fb.info) this.pendingRing[slot] = undefined;
    }
    if (!fb.ok) {
      if (p && this.guessing(p.workerId) && from < p.hashes.length) this.index.evict(p.workerId, p.hashes, true, from);
      return;
    }
    const workerId = p?.workerId ?? fb.workerId;
    const hashes = p?.hashes ?? this.chains.read(fb.info).hashes;
    const blockTokens = p?.blockTokens ?? this.blockSize * this.stride;
    const predicted = p?.predicted ?? fb.predictedCachedTokens;
    if (predicted !== undefined && fb.reportedCachedTokens !== undefined) {
      const s = feedbackStatsOf(this.feedback, workerId);
      const servedBefore = s.reportedTokens > 0;
      s.calls++;
      s.predictedTokens += predicted;
      s.reportedTokens += fb.reportedCachedTokens;
      const reportedBlocks = Math.floor(fb.reportedCachedTokens / blockTokens);
      // one block of slack: vLLM recomputes the last token of a fully cached prompt. Everything
      // from the first missing block on goes, so held blocks stay a prefix of the chain.
      if (this.guessing(workerId) && reportedBlocks < Math.floor(predicted / blockTokens) - 1) {
        s.corrections++;
        // a worker whose cache never served anything (caching off, another tokenisation) keeps
        // only what it reported
        if (!servedBefore) {
          s.correctedBlocks += this.index.evict(workerId, hashes, true, reportedBlocks);
          return;
        }
        // one that serves hits recomputed the missing blocks for this call and holds the whole
        // chain again, freshest in its LRU: re-stamp it all, without evicting first. An eviction
        // takes along every chain the index lists below the evicted blocks (other sessions that
        // branch from a shared prompt the engine had dropped part of), and the engine matches
        // those again as soon as this call has recomputed their parent blocks (block hashes
        // chain by content), while evicting them made those sessions' homes look empty.
        s.correctedBlocks += hashes.length - reportedBlocks;
        this.index.insert(workerId, hashes, true, 0);
        this.claims.answered(workerId, hashes);
        return;
      }
    }
    if (this.guessing(workerId)) {
      this.index.insert(workerId, hashes);
      this.claims.answered(workerId, hashes);
    }
  }

  /** The worker's cache was flushed: its guessed entry goes (replicas sharing the index see evictions). */
  forgetWorker(workerId: string): void {
    if (!this.guessing(workerId)) return;
    this.later.settle();
    this.index.clear(workerId);
    // picks in flight there added nothing to the cleared entry: a later failure takes back nothing
    this.claims.forget(workerId);
  }

  /** Whether this policy keeps `workerId`'s index entry itself: no precise index, or its events are
   *  not in step (then the entry is guessed as without one). */
  guessing(workerId: string): boolean {
    return this.events === undefined || this.events.guessed(workerId);
  }

  settle(): void {
    this.postponed.flush();
    this.later.settle();
  }

  stats(): CtxgateStats {
    this.later.settle();
    return {
      index: this.index.stats(),
      sessions: this.affinity.size,
      sharedBlocksTracked: this.shared.size,
      branches: { ...this.branches },
      feedback: Object.fromEntries([...this.feedback].map(([k, v]) => [k, { ...v }])),
    };
  }
}
