// Discrete-event fleet simulation on a virtual clock: the same arrivals go through one routing
// policy object from kvplanner (the select/observe code serve runs) to N engine models. Events:
// arrivals (in trace order) and engine step ends (a min-heap); at equal times step ends go
// first, so a worker's state is current when the router looks. The router's view of a worker is
// what the gateway keeps (in-flight requests, predicted prefill still queued) plus the engine
// signals a scraper would read (waiting, running, KV usage), taken fresh. observe() runs when a
// request finishes, with the cached tokens the engine reported at admission. A request with
// `after` (a session's next call) arrives `thinkMs` after that request finished (or was refused),
// so session starts are identical for every policy and later calls follow each policy's answers.
// Each step's time is booked as prefill, decode-only, or decode-only while requests waited
// (engineTime; per window with timelineMs), which shows whether compute or KV holds a saturated
// fleet back.
// dispatch 'admission' (late binding): sim-gate.ts, the gateway's gate on the virtual clock (the
// kvplanner/admission code the gate runs: bind at arrival, the fair queue, the release order, one
// look, max_wait_ms spills), so every call completes. A deadline is an event of its own (a held
// call spills at its deadline exactly). The queue is looked at after
// every arrival and every step end (before and after the worker's next step starts). 'arrival'
// (FleetConfig's default; bench fleet picks the product's default by engine): the policy picks at
// arrival.
// Optional: clients that give up after a timeout and resend (client-model.ts: a held send is
// dropped, one at an engine is computed for nobody) and calls spread over tenants (tenants.ts).
// Cost: O((arrivals + steps) · log N) plus the policies' own cost; with admission O(N) index
// reads per arrival and O(N + window · N) per step end while calls are held, and O(held) per
// deadline spill (the call is taken out of its tenant's queue).
import { hashKeys } from '../../kvplanner/hash-keys.ts';
import { KvEventIndex } from '../../kvplanner/kv-events/event-index.ts';
import { createPolicy } from '../../kvplanner/policy-registry.ts';
import type { AdmissionSettings } from '../../kvplanner/admission/admission-defaults.ts';
import type { Policy, PolicyOptions, RouteInfo, WorkerView } from '../../kvplanner/types.ts';
import type { TimingModel } from '../sim-worker/timing.ts';
import { EngineModel, type FleetEngine, type SimRequest, type StepResult } from './engine-model.ts';
import { SglangEngineModel } from './sglang-engine-model.ts';
import { SimGate, type SimHeld } from './sim-gate.ts';
import { StepHeap } from './step-heap.ts';
import { type ClientModel, Clients, type ClientStats } from './client-model.ts';
import { tenantOf } from './tenants.ts';
import { type FleetRequest, routeHash } from './trace.ts';

export interface FleetConfig {
  policy: string;
  policyOptions?: PolicyOptions;
  workers: number;
  kvTokens: number;
  blockSize: number;
  timing: TimingModel;
  maxBatchedTokens?: number;
  maxSeqs?: number;
  /** engine model: vLLM's V1 scheduler and block pool (default) or SGLang's radix cache and scheduler */
  engine?: 'vllm' | 'sglang';
  /** vLLM scheduler_reserve_full_isl (default true). */
  reserveFullPrompt?: boolean;
  model?: string;
  /** approx: policies learn from their own decisions; precise: from the engines' KV events */
  index?: 'approx' | 'precise';
  /** when set, FleetResult.timeline holds the fleet's state in windows of this many ms */
  timelineMs?: number;
  /** arrival (default): the policy picks when the call arrives; admission: the call waits at
   *  the gateway until a worker can admit it (late binding) */
  dispatch?: 'arrival' | 'admission';
  /** admission's worker check and queue bounds (ADMISSION_DEFAULTS when absent: the product's) */
  admission?: Partial<AdmissionSettings>;
  /** clients that give up after a timeout and resend (client-model.ts); absent: they wait */
  client?: ClientModel;
  /** calls spread over this many tenants (tenants.ts); absent or 1: one tenant */
  tenants?: number;
}

/** Engine seconds by kind of step: with prefill tokens, decode only, and decode only while
 *  requests waited (the queue head's blocks were not free: KV, not compute, held them back). */
export interface EngineTime {
  prefillS: number;
  decodeOnlyS: number;
  decodeOnlyWaitingS: number;
  /** decode tokens' context (StepResult.decodeContext) in steps with prefill, and in decode-only steps */
  decodeContextRiding: number;
  decodeContextAlone: number;
}

/** One window of the timeline, summed over the workers (steps count in the window they start). */
export interface TimelineRow extends EngineTime {
  startMs: number;
  arrivals: number;
  /** step-time-weighted mean over workers of requests waiting, and of KV usage, while busy */
  waitingMean: number;
  kvUsageMean: number;
}

export interface RequestOutcome {
  id: number;
  worker: number;
  arrivalMs: number;
  firstScheduledMs: number;
  firstTokenMs: number;
  finishMs: number;
  inputTokens: number;
  outputTokens: number;
  cachedTokens: number;
  predictedCachedTokens: number | undefined;
  branch: string;
  prefilled: number;
  preemptions: number;
  /** The prompt has no full KV block: nothing of it can ever be served from cache. */
  subBlockPrefix: boolean;
  /** with FleetConfig.tenants > 1 */
  tenant?: string;
}

export interface FleetResult {
  config: FleetConfig;
  outcomes: RequestOutcome[];
  /** Arrival times in the order the policy saw them (identical for every policy without
   *  closed-loop requests; with them, the open ones are). */
  arrivals: number[];
  perWorker: Array<{
    requests: number;
    peakUsedBlocks: number;
    capacityBlocks: number;
    /** most requests the engine ever had waiting (after an arrival or a step end) */
    peakWaiting: number;
    preemptions: number;
    prefillTokens: number;
    /** blocks the engine's prefix cache holds at the end */
    cachedBlocks: number;
    /** blocks the KV event index lists for this worker at the end (precise runs) */
    indexedBlocks?: number;
    engineTime: EngineTime;
  }>;
  timeline?: TimelineRow[];
  /** Times any request finished more than once (an invariant: 0). */
  duplicateFinishes: number;
  /** Calls the gateway-side queue held (dispatch admission; 0 otherwise), and its peak length. */
  gatewayQueued: number;
  gatewayPeak: number;
  /** Calls dispatched as at arrival because the queue (in total or the tenant's share) was full
   *  when they came, and held calls dispatched so when their max_wait_ms passed. */
  spilledFull: number;
  spilledDeadline: number;
  /** Calls dispatch admission sent at arrival all the same: bound (one worker's cache held them),
   *  or passed (nothing held and a worker could admit them, as the gate passes them). */
  boundAtArrival: number;
  passedAtArrival: number;
  /** Requests whose prompt + output exceed one engine's KV capacity: refused at arrival, as an
   *  engine refuses a sequence longer than its cache (they would preempt themselves forever). */
  rejected: number;
  policyStats?: object;
  /** with FleetConfig.client: timeouts, resends, failed calls, wasted work */
  client?: ClientStats;
  /** with FleetConfig.client: when the engines' last step ended (they may still compute sends
   *  their clients left after the last answered call) */
  lastStepEndMs?: number;
}

interface Inflight {
  sim: SimRequest;
  info: RouteInfo;
  predicted: number | undefined;
  branch: string;
  prefillLeft: number;
}

/**
 * Engine key → the routing hash of its trace block (what the policies index), or undefined: a
 * trace block counts as stored when its last sub-block is, and as removed when any sub-block is.
 */
function routingHash(engineBlock: number, traceBlock: number): (key: number, stored: boolean) => string | undefined {
  if (engineBlock === traceBlock) return routeHash;
  const per = traceBlock / engineBlock;
  return (key, stored) => (stored && key % 64 !== per - 1 ? undefined : routeHash(Math.floor(key / 64)));
}

function addStep(t: EngineTime, durationS: number, prefill: boolean, waiting: number, decodeContext: number): void {
  if (prefill) {
    t.prefillS += durationS;
    t.decodeContextRiding += decodeContext;
  } else {
    t.decodeContextAlone += decodeContext;
    t.decodeOnlyS += durationS;
    if (waiting > 0) t.decodeOnlyWaitingS += durationS;
  }
}

export function simulateFleet(
  reqs: readonly FleetRequest[],
  cfg: FleetConfig,
  onProgress?: (done: number) => void,
): FleetResult {
  const n = cfg.workers;
  // precise: every engine's BlockStored / BlockRemoved goes straight into one event index the
  // policy reads (an event bus with no delay or loss)
  const events = cfg.index === 'precise' ? new KvEventIndex() : undefined;
  const policy: Policy = createPolicy(
    cfg.policy,
    events ? { ...cfg.policyOptions, kv_index: events } : (cfg.policyOptions ?? {}),
  );
  const engines = Array.from({ length: n }, (_, i): FleetEngine => {
    const id = `w${i}`;
    const hash = routingHash(cfg.blockSize, reqs[0]?.blockTokens ?? cfg.blockSize);
    const ev = events && {
      stored: (key: number) => {
        const h = hash(key, true);
        if (h) events.blockStored(id, [h]);
      },
      removed: (key: number) => {
        const h = hash(key, false);
        if (h) events.blockRemoved(id, [h]);
      },
    };
    if (cfg.engine === 'sglang')
      return new SglangEngineModel({
        kvTokens: cfg.kvTokens,
        blockSize: cfg.blockSize,
        timing: cfg.timing,
        events: ev,
      });
    return new EngineModel({
      kvTokens: cfg.kvTokens,
      blockSize: cfg.blockSize,
      timing: cfg.timing,
      maxBatchedTokens: cfg.maxBatchedTokens,
      maxSeqs: cfg.maxSeqs,
      reserveFullPrompt: cfg.reserveFullPrompt,
      events: ev,
    });
  });
  const views: WorkerView[] = engines.map((_, i) => ({
    id: `w${i}`,
    url: `sim://w${i}`,
    healthy: true,
    inFlight: 0,
    queuedPrefillTokens: 0,
    maxInFlight: 0,
    kvTokens: cfg.kvTokens,
    engine: { waiting: 0, running: 0, kvUsage: 0 },
  }));
  const busy = new Array<boolean>(n).fill(false);
  const peakWaiting = new Array<number>(n).fill(0);
  const pending = new Array<StepResult | null>(n).fill(null);
  const heap = new StepHeap();
  const inflight = new Map<SimRequest, Inflight>();
  const outcomes: RequestOutcome[] = [];
  const arrivals: number[] = [];
  const finishedIds = new Set<number>();
  const clients = cfg.client
    ? new Clients<SimHeld>(cfg.client, reqs.reduce((m, r) => Math.max(m, r.id), -1) + 1)
    : undefined;
  const requestsPerWorker = new Array<number>(n).fill(0);
  let duplicateFinishes = 0;
  const model = cfg.model ?? cfg.timing.name;

  const refresh = (i: number): void => {
    const e = engines[i];
    const v = views[i].engine!;
    v.waiting = e.waiting.length;
    if (v.waiting > peakWaiting[i]) peakWaiting[i] = v.waiting;
    v.running = e.running.length;
    v.kvUsage = e.kvUsage();
  };
  const engineTime: EngineTime[] = engines.map(() => ({
    prefillS: 0,
    decodeOnlyS: 0,
    decodeOnlyWaitingS: 0,
    decodeContextRiding: 0,
    decodeContextAlone: 0,
  }));
  const timeline: TimelineRow[] | undefined = cfg.timelineMs ? [] : undefined;
  const row = (ms: number): TimelineRow => {
    const b = Math.floor(ms / cfg.timelineMs!);
    while (timeline!.length <= b)
      timeline!.push({
        startMs: timeline!.length * cfg.timelineMs!,
        arrivals: 0,
        prefillS: 0,
        decodeOnlyS: 0,
        decodeOnlyWaitingS: 0,
        decodeContextRiding: 0,
        decodeContextAlone: 0,
        waitingMean: 0,
        kvUsageMean: 0,
      });
    return timeline![b];
  };
  const account = (i: number, now: number, res: StepResult, prefill: boolean): void => {
    const e = engines[i];
    const waiting = e.waiting.length;
    addStep(engineTime[i], res.durationS, prefill, waiting, res.decodeContext);
    if (timeline) {
      const r = row(now);
      const durationS = res.durationS;
      addStep(r, durationS, prefill, waiting, res.decodeContext);
      r.waitingMean += waiting * durationS;
      r.kvUsageMean += e.kvUsage() * durationS;
    }
  };
  const kick = (i: number, now: number): void => {
    if (busy[i]) return;
    const before = engines[i].prefillTokens;
    const res = engines[i].step(now);
    refresh(i);
    if (!res) return;
    account(i, now, res, engines[i].prefillTokens > before);
    busy[i] = true;
    pending[i] = res;
    heap.push(now + res.durationS * 1000, i);
  };
  /** A step's outcomes become visible when it ends. */
  const land = (i: number): void => {
    const res = pending[i]!;
    pending[i] = null;
    for (const r of res.firstTokens) {
      clients?.firstToken(r.req.id);
      const f = inflight.get(r)!;
      views[i].queuedPrefillTokens -= f.prefillLeft;
      f.prefillLeft = 0;
    }
    for (const r of res.finished) finish(i, r);
    refresh(i);
  };
  const finish = (i: number, r: SimRequest): void => {
    const f = inflight.get(r)!;
    inflight.delete(r);
    if (finishedIds.has(r.req.id)) duplicateFinishes++;
    finishedIds.add(r.req.id);
    views[i].inFlight--;
    // the call this send answers (its first arrival: the user's wait), none if its client left
    const call = clients ? clients.finished(r.req.id, r.prefilled) : r.req;
    if (call) answered(i, r, f, call);
    policy.observe?.({
      workerId: views[i].id,
      info: f.info,
      reportedCachedTokens: r.cachedTokens,
      promptTokens: r.req.inputTokens,
      ok: true,
      predictedCachedTokens: f.predicted,
    });
  };
  const answered = (i: number, r: SimRequest, f: Inflight, call: FleetRequest): void => {
    outcomes.push({
      id: call.id,
      worker: i,
      arrivalMs: call.arrivalMs,
      firstScheduledMs: r.firstScheduledMs,
      firstTokenMs: r.firstTokenMs,
      finishMs: r.finishMs,
      inputTokens: r.req.inputTokens,
      outputTokens: r.req.outputTokens,
      cachedTokens: r.cachedTokens,
      predictedCachedTokens: f.predicted,
      branch: f.branch,
      prefilled: r.prefilled,
      preemptions: r.preemptions,
      subBlockPrefix: r.keys.length === 0,
      ...(cfg.tenants && cfg.tenants > 1 ? { tenant: f.info.tenant } : {}),
    });
    release(call.id, r.finishMs);
  };
  let rejected = 0;
  const capacityTokens = Math.floor(cfg.kvTokens / cfg.blockSize) * cfg.blockSize;
  // closed loop: request id → the request sent after it, and the released ones by send time
  const follower = new Map<number, number>();
  const open: number[] = [];
  reqs.forEach((r, i) => {
    if (r.after === undefined) open.push(i);
    else follower.set(r.after, i);
  });
  const released = new StepHeap();
  const release = (id: number, atMs: number): void => {
    const i = follower.get(id);
    if (i !== undefined) released.push(atMs + (reqs[i].thinkMs ?? 0), i);
  };
  const arrive = (req: FleetRequest): void => {
    arrivals.push(req.arrivalMs);
    if (timeline) row(req.arrivalMs).arrivals++;
    if (req.inputTokens + req.outputTokens > capacityTokens) {
      rejected++;
      release(req.id, req.arrivalMs);
      return;
    }
    clients?.sent(req, req.arrivalMs);
    const info: RouteInfo = {
      model,
      tenant: tenantOf(req, cfg.tenants ?? 1),
      sessionId: req.sessionId,
      text: req.text,
      blockHashes: req.hashes,
      // as the gateway passes them (middleware/pipeline.ts): the chain's 64-bit keys
      blockKeys: hashKeys(req.hashes),
      promptTokens: req.inputTokens,
      nowMs: req.arrivalMs,
    };
    if (gate) {
      const held = gate.arrive(req, info, req.arrivalMs);
      if (!held) return;
      clients?.holding(req.id, held);
      gate.look(req.arrivalMs);
      return;
    }
    dispatch(req, info, views, req.arrivalMs);
  };
  const dispatch = (req: FleetRequest, info: RouteInfo, candidates: readonly WorkerView[], now: number): void => {
    const choice = policy.select(candidates, info);
    if (!choice) throw new Error(`policy ${cfg.policy} returned no worker for request ${req.id}`);
    const i = views.indexOf(choice.worker);
    if (i < 0) throw new Error(`policy ${cfg.policy} returned a worker outside the fleet`);
    const sim = engines[i].add(req);
    const prefillLeft = Math.max(0, req.inputTokens - (choice.predictedCachedTokens ?? 0));
    inflight.set(sim, { sim, info, predicted: choice.predictedCachedTokens, branch: choice.branch, prefillLeft });
    views[i].inFlight++;
    views[i].queuedPrefillTokens += prefillLeft;
    requestsPerWorker[i]++;
    refresh(i);
    kick(i, now);
  };
  // late binding (sim-gate.ts: the gate's code on the virtual clock)
  const gate = cfg.dispatch === 'admission' ? new SimGate(policy, views, dispatch, cfg.admission) : undefined;

  let next = 0;
  let arrived = 0;
  let lastStepEndMs = 0;
  while (
    next < open.length ||
    released.size > 0 ||
    heap.size > 0 ||
    (gate !== undefined && gate.size > 0) ||
    (clients !== undefined && clients.pending > 0)
  ) {
    const tStep = heap.peekTime();
    const tOpen = next < open.length ? reqs[open[next]].arrivalMs : Infinity;
    const tNext = released.peekTime();
    const tResend = clients ? clients.nextResendMs() : Infinity;
    const tArrive = Math.min(tOpen, tNext, tResend);
    // a deadline goes after step ends at the same time (one may release the call) and before arrivals
    const tDue = gate ? gate.nextDeadline() : Infinity;
    // a client's timer likewise (a first token or an answer landing at that time is in time), and
    // before a deadline at the same time: the client's abort wins the race, so a call held exactly
    // as long as its client waits is dropped, not spilled to an engine that computes it for nobody
    const tClient = clients ? clients.nextTimerMs() : Infinity;
    if (tDue < tStep && tDue <= tArrive && tDue < tClient) {
      gate!.spillDue(tDue);
      continue;
    }
    if (tClient < tStep && tClient <= tArrive) {
      const { drop, failed, now } = clients!.fire();
      if (drop) gate!.drop(drop);
      if (failed) release(failed.id, now);
      continue;
    }
    if (tDue === Infinity && tStep === Infinity && tArrive === Infinity) break;
    if (tArrive < tStep) {
      if (tOpen <= Math.min(tNext, tResend)) arrive(reqs[open[next++]]);
      else if (tNext <= tResend) {
        const [t, i] = released.pop();
        arrive({ ...reqs[i], arrivalMs: t });
      } else arrive(clients!.takeResend());
      if (onProgress && (++arrived & 255) === 0) onProgress(arrived);
      continue;
    }
    const [t, i] = heap.pop();
    lastStepEndMs = t;
    land(i);
    busy[i] = false;
    gate?.look(t);
    kick(i, t);
    gate?.look(t);
  }
  // every held call must have been dispatched: one left here would vanish from the outcomes
  // (an engine signal that keeps an idle worker unable to admit would do that)
  if (gate && gate.size > 0) throw new Error(`${gate.size} calls still held at the gateway when the fleet went idle`);
  onProgress?.(reqs.length);
  return {
    config: cfg,
    outcomes,
    arrivals,
    perWorker: engines.map((e, i) => ({
      requests: requestsPerWorker[i],
      peakUsedBlocks: e.peakUsedBlocks,
      capacityBlocks: e.capacityBlocks(),
      peakWaiting: peakWaiting[i],
      preemptions: e.preemptions,
      prefillTokens: e.prefillTokens,
      cachedBlocks: e.cachedBlocks(),
      indexedBlocks: events?.index.size(`w${i}`),
      engineTime: engineTime[i],
    })),
    timeline: timeline?.map((r) => {
      const busyS = r.prefillS + r.decodeOnlyS;
      return busyS > 0 ? { ...r, waitingMean: r.waitingMean / busyS, kvUsageMean: r.kvUsageMean / busyS } : r;
    }),
    duplicateFinishes,
    gatewayQueued: gate?.queued ?? 0,
    gatewayPeak: gate?.peak ?? 0,
    spilledFull: gate?.spilledFull ?? 0,
    spilledDeadline: gate?.spilledDeadline ?? 0,
    boundAtArrival: gate?.bound ?? 0,
    passedAtArrival: gate?.passed ?? 0,
    rejected,
    policyStats: policy.stats?.(),
    client: clients?.stats,
    ...(clients ? { lastStepEndMs } : {}),
  };
}
