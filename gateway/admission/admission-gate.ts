// Late binding for one model (`models[].dispatch: admission`): before a call is routed it passes
// this gate. It goes at once when no call is held and some worker can admit one, or when one
// worker's cache holds its prompt (≥ locality_min_tokens beyond the runner-up, by the policy's own
// index: its cache is there now and may be evicted while it waits). Otherwise it waits in a
// per-tenant fair queue (kvplanner/admission/fair-queue.ts) until a worker can admit it: fewer
// waiting requests than max_waiting and KV usage under max_kv_usage, where "waiting" is the larger
// of the engine's scraped vllm:num_requests_waiting and the calls the gateway has in flight there
// beyond the engine's running count (what it sent since the last scrape). A free worker takes the
// first of the next locality_window held calls it holds, or that no worker holds; a call whose
// holder is busy is passed over for up to locality_wait_ms (delay scheduling). Full queue: 503
// admission_queue_full; a tenant's share full: 429 tenant_admission_queue_full; held past
// max_wait_ms: 503 admission_timeout; the client gone: the call leaves the queue.
// The queue is looked at every PUMP_INTERVAL_MS while calls are held (engine signals change on
// scrapes and answers; a timer needs no hook into either), releasing at most one call per worker
// that can admit per look, so the next look sees the ones just released in flight.
// Cost: admit O(workers) index reads when the queue is empty; each look O(workers · window).
import { type AdmissionSettings, ADMISSION_DEFAULTS } from '../../kvplanner/admission/admission-defaults.ts';
import { canAdmit } from '../../kvplanner/admission/can-admit.ts';
import { FairQueue } from '../../kvplanner/admission/fair-queue.ts';
import type { Policy, RouteInfo, WorkerView } from '../../kvplanner/types.ts';
import { GatewayError } from '../../middleware/errors.ts';
import type { AbortLike } from '../../middleware/types.ts';

/** How often held calls are looked at, ms. */
export const PUMP_INTERVAL_MS = 5;

interface Held {
  info: RouteInfo;
  resolve: () => void;
  reject: (err: Error) => void;
  signal: AbortLike;
  onAbort: () => void;
  consideredMs: number;
}

export interface GateWorker {
  view(): WorkerView;
}

export interface AdmissionStats {
  /** calls that went at once (a worker could admit, or one held their prompt) */
  passed: number;
  /** calls that waited in the queue and were released */
  released: number;
  refused: number;
  timedOut: number;
  aborted: number;
  queued: number;
}

export class AdmissionGate {
  private readonly s: AdmissionSettings;
  private readonly queue: FairQueue<Held>;
  private timer: NodeJS.Timeout | undefined;
  readonly stats: AdmissionStats = { passed: 0, released: 0, refused: 0, timedOut: 0, aborted: 0, queued: 0 };

  constructor(
    private readonly model: string,
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
    });
  }

  /** Resolves when the call may be routed; throws a GatewayError when it is refused. */
  admit(info: RouteInfo, signal: AbortLike): Promise<void> | undefined {
    const views = this.views();
    if ((this.queue.size === 0 && views.some((v) => canAdmit(v, this.s))) || this.holder(views, info) >= 0) {
      this.stats.passed++;
      return undefined;
    }
    return new Promise<void>((resolve, reject) => {
      const held: Held = { info, resolve, reject, signal, onAbort: () => {}, consideredMs: -1 };
      const pushed = this.queue.push(info.tenant, held, this.now());
      if (pushed !== 'queued') {
        this.stats.refused++;
        reject(
          pushed === 'tenant_full'
            ? new GatewayError(
                'tenant_admission_queue_full',
                `tenant '${info.tenant}' has ${this.s.max_queued_per_tenant} calls waiting for a worker of '${this.model}'`,
                null,
                { 'retry-after': '1' },
              )
            : new GatewayError(
                'admission_queue_full',
                `${this.s.max_queued} calls are waiting for a worker of '${this.model}'`,
                null,
                { 'retry-after': '1' },
              ),
        );
        return;
      }
      this.stats.queued++;
      held.onAbort = () => {
        // the client left: the call goes at the next look, where routing sees the abort
        held.consideredMs = -2;
      };
      signal.addEventListener('abort', held.onAbort, { once: true });
      this.schedule();
    });
  }

  /** Calls held now. */
  get size(): number {
    return this.queue.size;
  }

  /** Answers every held call (shutdown): none is left waiting. */
  close(err: Error): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    for (const h of this.queue.drain()) this.leave(h, err);
  }

  private views(): WorkerView[] {
    const out: WorkerView[] = [];
    for (const w of this.workers()) {
      const v = w.view();
      if (!v.healthy) continue;
      const e = v.engine;
      // calls sent since the engine last reported count as waiting there until it says otherwise
      const sent = e?.running !== undefined ? Math.max(0, v.inFlight - e.running) : 0;
      out.push(e ? { ...v, engine: { ...e, waiting: Math.max(e.waiting ?? 0, sent) } } : v);
    }
    return out;
  }

  /** Index in `views` of the worker that alone holds ≥ locality_min_tokens of the prompt, or -1. */
  private holder(views: readonly WorkerView[], info: RouteInfo): number {
    if (!this.policy.expectedCachedTokens) return -1;
    let best = -1;
    let top = 0;
    let second = 0;
    for (let i = 0; i < views.length; i++) {
      const c = this.policy.expectedCachedTokens([views[i]], info);
      if (c > top) {
        second = top;
        top = c;
        best = i;
      } else if (c > second) second = c;
    }
    return top - second >= this.s.locality_min_tokens ? best : -1;
  }

  private schedule(): void {
    if (this.timer) return;
    this.timer = setInterval(() => this.pump(), PUMP_INTERVAL_MS);
    this.timer.unref();
  }

  private leave(h: Held, err?: Error): void {
    h.signal.removeEventListener('abort', h.onAbort);
    if (err) h.reject(err);
    else h.resolve();
  }

  /** One look: deadlines, then at most one release per worker that can admit. */
  pump(): void {
    const now = this.now();
    for (const h of this.queue.expire(now)) {
      this.stats.timedOut++;
      this.leave(
        h,
        new GatewayError(
          'admission_timeout',
          `no worker of '${this.model}' could take the call within ${this.s.max_wait_ms} ms`,
          null,
          { 'retry-after': '1' },
        ),
      );
    }
    // the clients that left go now (routing sees their abort and ends them as today)
    for (let h = this.queue.takeFirst((x) => x.consideredMs === -2, now, Infinity); h; ) {
      this.stats.aborted++;
      this.leave(h);
      h = this.queue.takeFirst((x) => x.consideredMs === -2, now, Infinity);
    }
    const views = this.views();
    let able = views.filter((v) => canAdmit(v, this.s));
    while (able.length > 0 && this.queue.size > 0) {
      const taken = this.queue.takeFirst(
        (h) => {
          if (h.consideredMs < 0) h.consideredMs = now;
          if (now - h.consideredMs >= this.s.locality_wait_ms) return true;
          const i = this.holder(views, h.info);
          return i < 0 || able.includes(views[i]);
        },
        now,
        this.s.locality_window,
      );
      if (!taken) break;
      this.stats.released++;
      this.leave(taken);
      const i = this.holder(views, taken.info);
      const used = i >= 0 && able.includes(views[i]) ? views[i] : able[0];
      able = able.filter((v) => v !== used);
    }
    if (this.queue.size === 0 && this.timer) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }
}
