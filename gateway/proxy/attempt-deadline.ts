// An upstream attempt's time limits on the real clock. undici's connect, headers and body timeouts
// run on its "fast timers", whose clock advances 499 ms per run of a 499 ms timer however late that
// run is: on a process whose timers fire late (a saturated machine, long synchronous sections) they
// stretch with the lag. bench chaos measured a 4 s headers timeout ending its attempt after 8.7 s,
// and a 2 s one blocked in 1 s slices fires after ~7 s; calls that should have failed over in
// seconds reached the client's 15 s no-byte limit. This aborts the attempt (through the signal
// given to the request) when connect plus headers take longer than connect_timeout_ms +
// headers_timeout_ms of real time, and when no body byte arrives for body_timeout_ms after the
// headers or the previous byte. undici's own timers stay: whichever fires first ends the attempt,
// with the same error codes, so the failover, ejection and error shapes are unchanged.
// Only the worker's silence counts: the consumer holds the body limit while it waits on the client
// (backpressure) or on the call's stored session state (hold/resume), and a limit that fires after
// this process stalled looks once more after the poll phase (setImmediate) for bytes that arrived
// meanwhile, so neither a slow-reading client nor the gateway's own lag blames the worker.
// Cost per attempt: one AttemptSignal, one listener on the request's signal, one timer
// (refreshed per body chunk, O(1)).
import { EventEmitter } from 'node:events';
import type { AbortLike } from '../../middleware/types.ts';

/** An abort reason that reads as undici's own timeout errors (code checked by the failover). */
export class AttemptTimeoutError extends Error {
  constructor(
    readonly code: 'UND_ERR_HEADERS_TIMEOUT' | 'UND_ERR_BODY_TIMEOUT',
    message: string,
  ) {
    super(message);
    this.name = 'AttemptTimeoutError';
  }
}

export interface DeadlineMs {
  /** connect + response headers, from the attempt's start */
  headersMs: number;
  /** between body bytes, from the headers on */
  bodyMs: number;
}

/**
 * The signal an attempt's request is sent with. undici takes an EventEmitter that has `aborted`
 * and `reason` as a request's signal (it reads both and listens for 'abort' once), and creating one
 * and adding and removing undici's listener costs a small fraction of an AbortController's
 * AbortSignal (an EventTarget: a few µs per request).
 */
export class AttemptSignal extends EventEmitter {
  aborted = false;
  reason: unknown = undefined;

  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    this.emit('abort');
  }
}

export class AttemptDeadline {
  private readonly ac = new AttemptSignal();
  private timer: NodeJS.Timeout | undefined;
  /** after the headers: the body limit applies (unless held) */
  private inBody = false;
  private held = 0;
  /** body chunks seen: the expiry's second look compares it */
  private chunks = 0;
  // bound, not an arrow field: tsx's keepNames would name a per-attempt arrow (defineProperty, ~0.5-1 µs)
  private readonly onParentAbort: () => void;

  constructor(
    /** the request's own signal (client gone, shutdown deadline): forwarded */
    private readonly parent: AbortLike,
    private readonly ms: DeadlineMs,
  ) {
    this.onParentAbort = this.parentAborted.bind(this);
    if (parent.aborted) this.ac.abort(parent.reason);
    else parent.addEventListener('abort', this.onParentAbort, { once: true });
    this.timer = setTimeout(
      () =>
        this.expire(
          new AttemptTimeoutError('UND_ERR_HEADERS_TIMEOUT', `no response headers within ${ms.headersMs} ms`),
        ),
      ms.headersMs,
    );
  }

  private parentAborted(): void {
    this.ac.abort(this.parent.reason);
  }

  /** The signal to send the attempt's request with. */
  get signal(): AttemptSignal {
    return this.ac;
  }

  /** The status line is back: from now on the body's idle limit applies. */
  headers(): void {
    clearTimeout(this.timer);
    this.inBody = true;
    this.armBody();
  }

  /** A body chunk arrived: the idle limit starts again. */
  progress(): void {
    this.chunks++;
    if (this.held === 0) this.timer?.refresh();
  }

  /**
   * The consumer waits on something that is not the worker (the client draining, the stored
   * session state): the body limit stops until resume(). Nests.
   */
  hold(): void {
    if (!this.inBody) return;
    if (this.held++ === 0) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
  }

  /** The wait is over: the body limit starts again, whole. */
  resume(): void {
    if (!this.inBody || this.held === 0) return;
    if (--this.held === 0) this.armBody();
  }

  /** The attempt ended: no timer, no listener left behind. */
  done(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.inBody = false;
    this.parent.removeEventListener('abort', this.onParentAbort);
  }

  private armBody(): void {
    this.timer = setTimeout(() => {
      // Timers run before the poll phase: after a stall of this process, bytes the worker sent
      // meanwhile are read only after this callback. Look again once they had their chance.
      const seen = this.chunks;
      this.timer = setTimeout(() => {
        if (this.held > 0 || !this.inBody) return;
        if (this.chunks !== seen) this.armBody();
        else this.expire(new AttemptTimeoutError('UND_ERR_BODY_TIMEOUT', `no body byte for ${this.ms.bodyMs} ms`));
      }, 0);
    }, this.ms.bodyMs);
  }

  private expire(err: AttemptTimeoutError): void {
    this.timer = undefined;
    this.parent.removeEventListener('abort', this.onParentAbort);
    this.ac.abort(err);
  }
}
