// The accounting a request leaves for after its answer (metrics, the request record, the
// pipeline's observe, the usage ledger): queued, FIFO, and run from one 0 ms timer rather than
// from setImmediate. setImmediate runs before the event loop polls again, so a client that sends
// its next call as soon as it has the answer (an agent's next turn; one connection) waited for
// all of it; a timer runs after that poll, so the next call is read, processed and sent upstream
// first, and this work runs while the upstream computes. With nothing else to do it runs ~1 ms
// after the answer. What reads its results drains the queue first (GET /metrics, the request
// records, the reports, the budgets' spend lookup, shutdown), so no reader sees a request
// answered but not yet accounted. Cost: one array push per request, one timer per drained batch.

/** A job must not throw; one that does is reported and the rest of the queue still runs. */
export type AfterAnswerJob = () => void;

/** Runs `run` once, later: by default from a 0 ms timer (tests pass their own). */
export type AfterAnswerSchedule = (run: () => void) => void;

const onTimer: AfterAnswerSchedule = (run) => {
  setTimeout(run, 0);
};

export class AfterAnswer {
  private jobs: AfterAnswerJob[] = [];
  /** A run is scheduled: jobs pushed meanwhile ride with it. */
  private scheduled = false;

  constructor(private readonly schedule: AfterAnswerSchedule = onTimer) {}

  push(job: AfterAnswerJob): void {
    this.jobs.push(job);
    if (this.scheduled) return;
    this.scheduled = true;
    this.schedule(this.run);
  }

  /** Jobs queued and not run yet. */
  get pending(): number {
    return this.jobs.length;
  }

  /** Runs every queued job now (a reader of what they write calls this first). The scheduled run
   *  still comes and runs what was queued since. */
  drain(): void {
    const jobs = this.jobs;
    this.jobs = [];
    for (const job of jobs) {
      try {
        job();
      } catch (err) {
        process.emitWarning(`ctxgate: request accounting threw: ${(err as Error).message}`);
      }
    }
  }

  private readonly run = (): void => {
    this.scheduled = false;
    this.drain();
  };
}
