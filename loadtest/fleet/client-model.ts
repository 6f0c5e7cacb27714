// The fleet simulator's optional client model: clients that give up and resend, as the official
// OpenAI SDKs do (openai-node and openai-python: a 600 s request timeout, 2 retries by default, a
// timed-out request retried after 0.5 s × 2^n, at most 8 s; their jitter is left out so runs stay
// deterministic). A call whose response head is not back T after it was sent is abandoned: a
// streaming client's head comes with the first token, a non-streaming one's with the whole
// answer. An abandoned call still held at the gateway leaves the queue (the gate drops a call whose
// client left); one already at an engine keeps computing there (its work is wasted, and counted).
// Then the call is sent again as a new arrival (its own place in the queue, its own release slack)
// until its retries are spent; after that the call has failed (the SDK raises). The user's TTFT is
// counted from the first send. Cost: O(log calls) per send (one timer), O(1) per event.
// Settings: --client-timeout-s, --client-retries, --client-stream (bench fleet).
import { StepHeap } from './step-heap.ts';
import type { FleetRequest } from './trace.ts';

export interface ClientModel {
  /** how long the client waits for the response head after each send, ms */
  timeoutMs: number;
  /** resends after a timeout (the SDKs' default: 2) */
  retries: number;
  /** true: the head comes with the first token (a stream); false: with the whole answer */
  stream: boolean;
}

/** The SDKs' first retry delay (openai-node INITIAL_RETRY_DELAY 0.5 s) and its cap (MAX_RETRY_DELAY 8 s). */
export const SDK_RETRY_BASE_MS = 500;
export const SDK_RETRY_MAX_MS = 8_000;
/** The SDKs' default retries (openai-node DEFAULT_MAX_RETRIES, openai-python DEFAULT_MAX_RETRIES). */
export const SDK_RETRIES = 2;

/** Delay before resend n + 1 (n resends made so far). */
export function retryDelayMs(n: number): number {
  return Math.min(SDK_RETRY_MAX_MS, SDK_RETRY_BASE_MS * 2 ** n);
}

export interface ClientStats {
  /** sends whose head was not back in time */
  timeouts: number;
  /** sends after a timeout */
  resent: number;
  /** calls whose last send timed out too: the client raised */
  failed: number;
  /** abandoned sends that were still held at the gateway (dropped there, never computed) */
  droppedHeld: number;
  /** abandoned sends an engine had: computed all the same */
  abandonedAtEngine: number;
  /** prompt tokens the engines prefilled for abandoned sends */
  wastedPrefillTokens: number;
}

/** One send of a call. */
interface Send<H> {
  /** the call as the trace has it (its id and first arrival are the user's) */
  origin: FleetRequest;
  /** resends before this one */
  n: number;
  back: boolean;
  abandoned: boolean;
  /** set by the simulator while the send is held at the gateway */
  held?: H;
}

/** H: the simulator's record of a held call (heldMs < 0 once it left the queue). */
export class Clients<H extends { heldMs: number }> {
  readonly stats: ClientStats = {
    timeouts: 0,
    resent: 0,
    failed: 0,
    droppedHeld: 0,
    abandonedAtEngine: 0,
    wastedPrefillTokens: 0,
  };
  private readonly sends = new Map<number, Send<H>>();
  private readonly timers = new StepHeap();
  private readonly resends = new StepHeap();
  private readonly resendReqs: FleetRequest[] = [];

  constructor(
    readonly model: ClientModel,
    /** ids for resends start here (above every trace id) */
    private nextId: number,
  ) {}

  /** A send leaves the client now (the trace's arrival, or a resend). */
  sent(req: FleetRequest, now: number): void {
    if (!this.sends.has(req.id)) this.sends.set(req.id, { origin: req, n: 0, back: false, abandoned: false });
    this.timers.push(now + this.model.timeoutMs, req.id);
  }

  /** The simulator holds this send at the gateway (heldMs < 0 once it left the queue). */
  holding(id: number, held: H): void {
    const s = this.sends.get(id);
    if (s) s.held = held;
  }

  firstToken(id: number): void {
    const s = this.sends.get(id);
    if (s && this.model.stream) s.back = true;
  }

  /** A send finished at an engine: the call it answers (its trace id and first arrival), or
   *  undefined when its client had abandoned it (the answer goes nowhere). */
  finished(id: number, prefilled: number): FleetRequest | undefined {
    const s = this.sends.get(id);
    if (!s) return undefined;
    this.sends.delete(id);
    if (s.abandoned) {
      this.stats.wastedPrefillTokens += prefilled;
      return undefined;
    }
    s.back = true;
    return s.origin;
  }

  nextTimerMs(): number {
    return this.timers.peekTime();
  }

  nextResendMs(): number {
    return this.resends.peekTime();
  }

  get pending(): number {
    return this.timers.size + this.resends.size;
  }

  /** The next timer fires. Returns what the simulator must do: drop a held send from the gate
   *  (`drop`), and whether the call failed (the client gave up: release its session's next call). */
  fire(): { drop?: H; failed?: FleetRequest; now: number } {
    const [now, id] = this.timers.pop();
    const s = this.sends.get(id);
    if (!s || s.back) return { now };
    s.abandoned = true;
    this.stats.timeouts++;
    let drop: H | undefined;
    if (s.held && s.held.heldMs >= 0) {
      this.stats.droppedHeld++;
      drop = s.held;
      this.sends.delete(id);
    } else this.stats.abandonedAtEngine++;
    if (s.n >= this.model.retries) {
      this.stats.failed++;
      return { drop, failed: s.origin, now };
    }
    const req: FleetRequest = { ...s.origin, id: this.nextId++, after: undefined, thinkMs: undefined };
    this.sends.set(req.id, { origin: s.origin, n: s.n + 1, back: false, abandoned: false });
    this.resendReqs.push(req);
    this.resends.push(now + retryDelayMs(s.n), this.resendReqs.length - 1);
    this.stats.resent++;
    return { drop, now };
  }

  /** The next resend, with its send time as its arrival. */
  takeResend(): FleetRequest {
    const [t, i] = this.resends.pop();
    return { ...this.resendReqs[i], arrivalMs: t };
  }
}
