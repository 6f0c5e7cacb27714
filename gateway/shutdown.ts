// Graceful shutdown: stop accepting, let in-flight requests finish up to shutdown.deadline_ms,
// then end the streams still running with the documented SSE error event (and non-stream calls
// with 503 shutting_down), then run the close hooks other parts registered (ledger flush,
// session state, Redis clients) and close the upstream pools. Hooks run once, in registration
// order reversed (last opened, first closed), each bounded by HOOK_TIMEOUT_MS.
import type { FastifyInstance } from 'fastify';

/** A close hook slower than this is abandoned (and reported) so exit is never held hostage. */
export const HOOK_TIMEOUT_MS = 5_000;
/** After aborting, how long the aborted replies get to flush their last bytes. */
export const ABORT_FLUSH_MS = 250;

export type ShutdownHook = () => unknown;

interface Hook {
  name: string;
  fn: ShutdownHook;
}

/** In-flight proxied requests and the hooks to run at shutdown. One per gateway. */
export class Lifecycle {
  private readonly hooks: Hook[] = [];
  private readonly running = new Set<() => void>();
  private idleWaiters: (() => void)[] = [];
  private hooksRun: Promise<Error[]> | undefined;

  /** Registers a close hook (flush a ledger, persist session state, quit a client). */
  onShutdown(fn: ShutdownHook, name = fn.name || 'hook'): void {
    this.hooks.push({ name, fn });
  }

  /** Tracks one in-flight request; `stop` ends it early at the deadline. Returns the untrack. */
  track(stop: () => void): () => void {
    this.running.add(stop);
    return () => {
      this.running.delete(stop);
      if (this.running.size === 0) {
        const w = this.idleWaiters;
        this.idleWaiters = [];
        for (const f of w) f();
      }
    };
  }

  get inFlight(): number {
    return this.running.size;
  }

  /** Resolves once nothing is in flight, or after `ms`; true when idle. */
  idle(ms: number): Promise<boolean> {
    if (this.running.size === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const t = setTimeout(() => resolve(this.running.size === 0), ms);
      this.idleWaiters.push(() => {
        clearTimeout(t);
        resolve(true);
      });
    });
  }

  /** Ends everything still in flight; returns how many were stopped. */
  abortAll(): number {
    const stops = [...this.running];
    for (const s of stops) {
      try {
        s();
      } catch {
        // a stop that throws has nothing left to stop
      }
    }
    return stops.length;
  }

  /** Runs every hook once (later calls share the first run); returns the errors. */
  runHooks(timeoutMs = HOOK_TIMEOUT_MS): Promise<Error[]> {
    this.hooksRun ??= (async () => {
      const errors: Error[] = [];
      for (const h of [...this.hooks].reverse()) {
        let t: NodeJS.Timeout | undefined;
        const timeout = new Promise<never>((_, reject) => {
          t = setTimeout(() => reject(new Error(`close hook '${h.name}' took longer than ${timeoutMs} ms`)), timeoutMs);
        });
        try {
          await Promise.race([Promise.resolve().then(h.fn), timeout]);
        } catch (err) {
          errors.push(err instanceof Error ? err : new Error(String(err)));
        } finally {
          clearTimeout(t);
        }
      }
      return errors;
    })();
    return this.hooksRun;
  }
}

export interface DrainResult {
  /** Requests still running at the deadline, ended by the gateway. */
  aborted: number;
  hookErrors: Error[];
}

/**
 * The shutdown sequence. `app.close()` stops the listener at once and resolves when every
 * connection is gone; requests still running at the deadline are stopped (streams get the error
 * event), then lingering sockets are cut.
 */
export async function drain(
  app: FastifyInstance,
  life: Lifecycle,
  deadlineMs: number,
  beforeHooks?: () => Promise<void>,
): Promise<DrainResult> {
  const closed = app.close();
  let aborted = 0;
  if (!(await life.idle(deadlineMs))) {
    aborted = life.abortAll();
    await life.idle(ABORT_FLUSH_MS);
  }
  // Finished replies may still sit in socket buffers: close idle sockets, give the rest a moment,
  // then cut what is left (clients that never read their last bytes must not hold exit).
  app.server.closeIdleConnections?.();
  await Promise.race([closed.catch(() => undefined), new Promise((r) => setTimeout(r, ABORT_FLUSH_MS).unref())]);
  app.server.closeAllConnections?.();
  await closed.catch(() => undefined);
  await beforeHooks?.();
  const hookErrors = await life.runHooks();
  return { aborted, hookErrors };
}
