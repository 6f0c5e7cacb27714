// A request's own abort signal (the client went away, or the shutdown deadline passed): what the
// pipeline's session lock, the relay and each attempt's deadline listen to. An AbortController
// costs ~3.5-5 µs to create per request (its AbortSignal is an EventTarget that Node tracks for
// GC), this EventEmitter ~0.2 µs; it reads the same: `aborted`, `reason` (the same AbortError
// DOMException an AbortController's abort() without a reason gives), 'abort' fired once.
import type { AbortLike } from '../../middleware/types.ts';
import { AttemptSignal } from './attempt-deadline.ts';

export class RequestSignal extends AttemptSignal implements AbortLike {
  override abort(reason: unknown = new DOMException('This operation was aborted', 'AbortError')): void {
    super.abort(reason);
  }

  addEventListener(_type: 'abort', listener: () => void, options?: { once?: boolean }): void {
    if (options?.once) this.once('abort', listener);
    else this.on('abort', listener);
  }

  removeEventListener(_type: 'abort', listener: () => void): void {
    this.off('abort', listener);
  }
}
