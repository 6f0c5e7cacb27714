// Late binding for one model (`models[].dispatch: admission`): before a call is routed it passes
// this gate. It goes at once when no call is held and some worker can admit one (routed among the
// workers that can, as the simulator dispatches it), or when one
// worker's cache holds its prompt (≥ locality_min_tokens beyond the runner-up, by the policy's own
// index: its cache is there now and may be evicted while it waits) and no other tenant has calls
// held (then it queues like any call and waits for its holder by delay scheduling: one tenant's
// flood of continuations cannot keep the workers busy while another tenant's calls wait; with
// one tenant, as in the fleet simulator, the rule is the simulator's: both call arrival.ts). Otherwise it waits in a
// per-tenant fair queue (kvplanner/admission/fair-queue.ts) until a worker can admit it: fewer
// waiting requests than max_waiting and KV usage under max_kv_usage, where "waiting" is the larger
// of the engine's scraped vllm:num_requests_waiting and the gateway's calls there without a first
// byte beyond what the engine runs in prefill (what it sent since the last scrape; a call that
// answered never counts, though it stays in flight while a slow reader drains it). A free worker takes the
// first of the next locality_window held calls it holds, or that no worker holds; a call whose
// holder is busy is passed over for up to locality_wait_ms (delay scheduling). A released call is
// routed among the workers that could admit it at release (its holder alone when that one could),
// as the simulator dispatches it. A full queue with one tenant holding calls never refuses: the
// newcomer is held and that tenant's oldest held call spills (fair-queue.ts), and a held call
// whose max_wait_ms passes spills too: a spilled call goes on at once as at arrival (to any worker
// with room, where the policy sends it, queueing at the engine as without late binding), counted
// spilledFull / spilledDeadline. With other tenants holding calls a full queue refuses instead
// (a spill bypasses the gate: a flooding tenant's spills would keep every engine busy and the
// others' held calls waiting out max_wait_ms, worse than arrival): a tenant at its share gets 429
// tenant_admission_queue_full; a full total refuses the newest held call of a tenant holding at
// least two more than the newcomer's (429 tenant_admission_queue_full) and holds the newcomer,
// else the newcomer gets 503 admission_queue_full (retry-after 1 on both), counted refused. So
// the gate bounds what the gateway holds, and a held call waits for what was at the engines when
// it arrived (as at arrival) plus only the round robin and older calls' deadline spills, never
// for another tenant's spills; the flooder's excess gets 429 (arrival would queue it). The client
// gone (before admit() or while held): the call leaves at once (aborted), never queued.
// Drain: at the start of a graceful shutdown (close(), from gates.ts's closeGates) every held call
// is answered 503 shutting_down at once, never sent (another replica can take it), and a call that
// would be held from then on is answered the same way; calls that go at once still go.
// What a held call keeps: it waits before its first routing decision, so its session lock, tenant
// slot (limits.max_concurrent_per_tenant) and body stay held while it waits. Bound: at most
// max_queued calls (max_queued_per_tenant of one tenant) × limits.max_body_bytes each, for at most
// max_wait_ms; a retry of the same session waits for the abandoned call only until the gateway
// sees the client's socket close.
// When it looks: on events that can make a worker admit (an attempt's end, an engine scrape;
// coalesced into one look per event-loop turn), and every PUMP_FALLBACK_MS while
// calls are held (deadlines, health changes). A look (kvplanner/admission/release-look.ts, the
// simulator's) releases at most one call per worker that can admit, so the next look sees the
// ones just released in flight.
// Cost: admit O(workers) index reads; each look O(workers · tenants · window) index reads, each
// held call's holder looked up once per look.
import { type AdmissionSettings, ADMISSION_DEFAULTS } from '../../kvplanner/admission/admission-defaults.ts';
import { canAdmit } from '../../kvplanner/admission/can-admit.ts';
import { FairQueue } from '../../kvplanner/admission/fair-queue.ts';
import { bindsAtArrival, type HolderRead, localityHome, readHolders } from '../../kvplanner/admission/arrival.ts';
import { releaseLook } from '../../kvplanner/admission/release-look.ts';
import { releasePlacement } from '../../kvplanner/admission/release-order.ts';
import type { Policy, RouteInfo, WorkerView } from '../../kvplanner/types.ts';
import { GatewayError } from '../../middleware/errors.ts';
import type { AbortLike } from '../../middleware/types.ts';

/** How often held calls are looked at besides the events that wake the gate, ms. */
export const PUMP_FALLBACK_MS = 100;

function allAdmit(views: readonly WorkerView[], s: AdmissionSettings): boolean {
  for (const v of views) if (!canAdmit(v, s)) return false;
  return true;
}

/** The workers (ids) a released call is routed among; undefined: every worker with room. */
export type Release = readonly string[] | undefined;

interface Held {
  info: RouteInfo;
  resolve: (only: Release) => void;
  reject: (err: Error) => void;
  signal: AbortLike;
  onAbort: () => void;
  consideredMs: number;
  atMs: number;
}

export type AdmissionOutcome =
  | 'passed'
  | 'bound'
  | 'released'
  | 'spilledFull'
  | 'spilledDeadline'
  | 'refused'
  | 'aborted'
  | 'queued'
  | 'shutdown';

export interface GateWorker {
  view(): WorkerView;
}

export interface AdmissionStats {
  /** calls that went at once because a worker could admit and nothing was held (every worker
   *  could: to any, where the policy sends it; else among those that could) */
  passed: number;
  /** calls that went at once to the worker holding their prompt while some worker could not
   *  admit or calls were held */
  bound: number;
  /** calls that waited in the queue and were released */
  released: number;
  /** held calls sent on as at arrival: to make room in a full queue, and at max_wait_ms */
  spilledFull: number;
  spilledDeadline: number;
  /** refused while another tenant held calls: a share full (429), or the total full (429 for the
   *  tenant holding the most, else 503) */
  refused: number;
  aborted: number;
  queued: number;
  /** held, or to be held, when the gateway began to drain: answered 503 shutting_down */
  shutdown: number;
}

export class AdmissionGate {
  private readonly s: AdmissionSettings;
  private readonly queue: FairQueue<Held>;
  /** scratch: each worker's cached tokens of the call being looked at (holder) */
  private readonly each: number[] = [];
  private timer: NodeJS.Timeout | undefined;
  /** Wakes the gate when an attempt ends (a worker freed a place). */
  readonly observer = { onEnd: (): void => this.wake() };
  readonly stats: AdmissionStats = {
    passed: 0,
    bound: 0,
    released: 0,
    spilledFull: 0,
    spilledDeadline: 0,
    refused: 0,
    aborted: 0,
    queued: 0,
    shutdown: 0,
  };
  /** Called on every outcome (metrics); `waitedMs` for calls that were held. */
  onOutcome: ((outcome: AdmissionOutcome, waitedMs?: number) => void) | undefined;
  private wakePending = false;
  /** While it says true, no worker's engine signals are known yet (the scraper's first round has
   *  not landed): calls are held, not passed as if every worker could admit (assemble.ts sets it
   *  with the scraper, which wakes the gate when the round lands). */
  signalsPending: (() => boolean) | undefined;
  /** Called when a call is held while signals are pending (asks for the first round now). */
  onPending: (() => void) | undefined;
  /** Set by close(): the error a call that would be held gets now. */
  private closedWith: (() => Error) | undefined;

  constructor(
    readonly model: string,
    private readonly workers: () => readonly GateWorker[],
    private readonly policy: Policy,
    settings: Partial<AdmissionSettings> = {},
    private readonly now: () => number = Date.now,
  ) {
    this.s = { ...ADMISSION_DEFAULTS, ...settings };
    this.queue = new FairQueue<Held>({
      maxQueued: this.s.max_queued,
      maxPerTenant: this.s.max_queued_per_tenant,
      maxWaitMs: this.s.max_wait_ms,
      msPerHeld: this.s.release_ms_per_held,
      slackPerDrain: this.s.release_slack_per_drain,
    });
  }

  /** The workers to route the call among: now (an array: those that can admit it; undefined: any
   *  worker, for a call bound to its holder at arrival or spilled), or when it is released (a
   *  promise, which rejects only at drain start: 503 shutting_down). */
  admit(info: RouteInfo, signal: AbortLike): Release | Promise<Release> {
    const views = this.views();
    // no healthy worker: not held; routing answers 503 no_healthy_worker at once, as with arrival
    if (views.length === 0) {
      this.count('passed');
      return undefined;
    }
    const pending = this.signalsPending?.() === true;
    if (pending) this.onPending?.();
    // nothing held and every worker can admit: the call goes now, where the policy sends it, as at
    // arrival (the per-call path of an unloaded fleet: no holder lookup, no allocation; binding to
    // the holder or naming every worker would route it the same)
    if (!pending && this.queue.size === 0 && allAdmit(views, this.s)) {
      this.count('passed');
      return undefined;
    }
    // bind at arrival to the holder unless another tenant's calls are held (they go first, fairly;
    // arrival.ts, the simulator's rule); the read also prices the call if it is held. Not read when
    // it cannot bind: a call refused below (a flooding tenant's) costs no index read
    let read: HolderRead | undefined;
    if (!pending && !this.queue.othersWaiting(info.tenant)) {
      read = readHolders(this.policy, views, info, this.each);
      if (bindsAtArrival(read, info.tenant, this.queue, this.s)) {
        this.count('bound');
        return undefined;
      }
    }
    if (!pending && this.queue.size === 0) {
      // among the workers that can admit it, as the simulator dispatches it (not any with room)
      const able: string[] = [];
      for (const v of views) if (canAdmit(v, this.s)) able.push(v.id);
      if (able.length > 0) {
        this.count('passed');
        return able;
      }
    }
    return new Promise<Release>((resolve, reject) => {
      if (this.closedWith) {
        this.count('shutdown');
        reject(this.closedWith());
        return;
      }
      // the client already left (its socket closed while the pipeline ran): an abort listener
      // added now would never fire, so the call would wait out max_wait_ms as a ghost
      if (signal.aborted) {
        this.count('aborted', 0);
        resolve(undefined);
        return;
      }
      const now = this.now();
      // other tenants hold calls: a full queue refuses rather than spills (the header)
      const room = this.queue.roomFor(info.tenant);
      if (room && 'refuse' in room) {
        this.count('refused');
        reject(room.refuse === 'tenant_full' ? this.tenantFull(info.tenant) : this.queueFull());
        return;
      }
      if (room) {
        this.count('refused', now - room.evicted.atMs);
        this.leave(room.evicted, undefined, this.tenantFull(room.tenant));
      }
      const held: Held = { info, resolve, reject, signal, onAbort: () => {}, consideredMs: -1, atMs: now };
      // released in the simulator's order (release-order.ts): cheap prefills first, within a bounded
      // slack, a held call's prompt charged once
      const top = (read ?? readHolders(this.policy, views, info, this.each)).top;
      const place = releasePlacement(this.queue, info, top, this.s);
      const spilled = this.queue.push(info.tenant, held, held.atMs, place.slackMs, place.chain);
      if (spilled === held) {
        // no call can be held at all (a bound below 1): it goes on as at arrival
        this.count('spilledFull', 0);
        resolve(undefined);
        return;
      }
      this.count('queued');
      held.onAbort = () => {
        // the client left: out of the queue now, and on, where routing sees the abort and ends it
        if (!this.queue.remove(info.tenant, held)) return;
        this.count('aborted', this.now() - held.atMs);
        this.leave(held, undefined);
      };
      signal.addEventListener('abort', held.onAbort, { once: true });
      if (spilled) {
        this.count('spilledFull', held.atMs - spilled.atMs);
        this.leave(spilled, undefined);
      }
      this.schedule();
    });
  }

  private tenantFull(tenant: string): GatewayError {
    return new GatewayError(
      'tenant_admission_queue_full',
      `tenant '${tenant}' holds its share of the calls waiting for a worker of '${this.model}' (max_queued_per_tenant ${this.s.max_queued_per_tenant}, or the most of a full queue)`,
      null,
      { 'retry-after': '1' },
    );
  }

  private queueFull(): GatewayError {
    return new GatewayError(
      'admission_queue_full',
      `${this.s.max_queued} calls of several tenants are waiting for a worker of '${this.model}'`,
      null,
      { 'retry-after': '1' },
    );
  }

  /** Calls held now. */
  get size(): number {
    return this.queue.size;
  }

  /** Answers every held call with `err` (drain start), and every call that would be held from now
   *  on: none is left waiting, none of them is sent. */
  close(err: Error | (() => Error)): void {
    const make = typeof err === 'function' ? err : () => err;
    this.closedWith = make;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    const now = this.now();
    for (const h of this.queue.drain()) {
      this.count('shutdown', now - h.atMs);
      this.leave(h, undefined, make());
    }
  }

  /** Something changed that may let a worker admit: look at the held calls once this turn ends. */
  wake(): void {
    if (this.wakePending || this.queue.size === 0) return;
    this.wakePending = true;
    setImmediate(() => {
      this.wakePending = false;
      this.pump();
    });
  }

  private count(outcome: AdmissionOutcome, waitedMs?: number): void {
    this.stats[outcome]++;
    this.onOutcome?.(outcome, waitedMs);
  }

  private views(): WorkerView[] {
    const out: WorkerView[] = [];
    for (const w of this.workers()) {
      const v = w.view();
      if (!v.healthy) continue;
      const e = v.engine;
      // calls sent since the engine last reported count as waiting there until it says otherwise:
      // those without a first byte that the engine's running count does not cover. Only running
      // calls beyond the answering ones (in prefill) can cover them: a call that answered and is
      // still in flight may be done at the engine, its answer relayed to a slow reader or stored,
      // and must never count as waiting (a client holding unread streams would hold every
      // tenant's calls at the gate with the engine idle).
      const awaiting = v.awaitingFirstByte ?? v.inFlight;
      const sent =
        e?.running !== undefined ? Math.max(0, awaiting - Math.max(0, e.running - (v.inFlight - awaiting))) : 0;
      out.push(e ? { ...v, engine: { ...e, waiting: Math.max(e.waiting ?? 0, sent) } } : v);
    }
    return out;
  }

  /** Index in `views` of the worker that alone holds ≥ locality_min_tokens of the prompt, or -1. */
  private holder(views: readonly WorkerView[], info: RouteInfo): number {
    return localityHome(readHolders(this.policy, views, info, this.each), this.s);
  }

  private schedule(): void {
    if (this.timer) return;
    this.timer = setInterval(() => this.pump(), PUMP_FALLBACK_MS);
    this.timer.unref();
  }

  private leave(h: Held, only: Release, err?: Error): void {
    h.signal.removeEventListener('abort', h.onAbort);
    if (err) h.reject(err);
    else h.resolve(only);
  }

  /** One look: deadlines, then at most one release per worker that can admit. */
  pump(): void {
    const now = this.now();
    // past max_wait_ms: sent on as at arrival (to any worker with room, queueing at the engine)
    for (const h of this.queue.expire(now)) {
      this.count('spilledDeadline', now - h.atMs);
      this.leave(h, undefined);
    }
    const views = this.views();
    // every worker went unhealthy: the held calls go to routing, which answers 503 no_healthy_worker
    if (views.length === 0)
      for (
        let h = this.queue.takeFirst(() => true, now, Infinity);
        h;
        h = this.queue.takeFirst(() => true, now, Infinity)
      ) {
        this.count('released', now - h.atMs);
        this.leave(h, undefined);
      }
    // one look (release-look.ts, the simulator's code): at most one call per worker that can admit,
    // since a released call shows in the views only once the proxy has sent it; each held call's
    // holder read once (the index does not change within the look). No signals known yet: nothing
    // is released before the first scrape round lands (it wakes the gate)
    releaseLook(this.queue, {
      views,
      settings: this.s,
      nowMs: now,
      holderOf: (h) => this.holder(views, h.info),
      release: (h, only) => {
        this.count('released', now - h.atMs);
        this.leave(
          h,
          only.map((v) => v.id),
        );
      },
      signalsKnown: this.signalsPending?.() !== true,
    });
    if (this.queue.size === 0 && this.timer) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }
}
