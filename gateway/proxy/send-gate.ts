// A request's send gate: the point its body has gone upstream. The context pipeline leaves its
// state write, and the stages' after-send work (middleware/after-send.ts), for this point
// (PipelineContext.sent), so it runs while the worker computes instead of before the send; so
// does the routing decision's index insert (RouteInfo.sent, routed-after-send.ts), after it.
// The upstream call opens the gate once undici wrote the first attempt's body (its onRequestSent:
// undici writes after the dispatch returns, upstream-response.ts), or at that attempt's headers or
// failure if they come first; the request handler opens it on every other way out (no worker,
// capacity, shutdown, client gone, a throw before the send) before it waits for the stored state,
// so the work runs exactly once on every path, as it did from the next turn of the event loop
// before. Cost: one object per request, one bound function.

export class SendGate {
  private waiting: (() => void) | undefined;
  /** The routing decision's waiting work (RouteInfo.sent), run after the pipeline's. */
  private routing: (() => void) | undefined;
  private isOpen = false;

  /** PipelineContext.sent: runs `run` when the gate opens (now if it is open). One waiter a call. */
  when(run: () => void): void {
    if (this.isOpen) run();
    else this.waiting = run;
  }

  /** RouteInfo.sent: as when(), for the routing decision's work (the last one given waits). */
  whenRouted(run: () => void): void {
    if (this.isOpen) run();
    else this.routing = run;
  }

  /** The body went upstream (or never will): runs the waiting work, once. */
  open(): void {
    if (this.isOpen) return;
    this.isOpen = true;
    const run = this.waiting;
    const routed = this.routing;
    this.waiting = undefined;
    this.routing = undefined;
    run?.();
    routed?.();
  }

  get opened(): boolean {
    return this.isOpen;
  }
}
