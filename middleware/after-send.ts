// "After the send": work a call leaves for once its body has gone upstream. A stage whose work
// the upstream body and the routing decision do not read (bookkeeping it keeps in its session
// slot, records for the next call) hands it here instead of doing it on the request's critical
// path; it then runs while the upstream computes (0.5 ms on the bench's fake worker, 100s of ms
// on a real engine).
//
// Contract (StageContext.afterSend; use `afterSend(ctx, job)` below, which runs the job at once
// when the caller gave no queue: benches and tests that drive the chain themselves):
// - Jobs run in the order they were handed over, after the upstream request was dispatched (or
//   once the call is known never to send one: no worker, shutdown, client gone), under the
//   session's lock, before the pipeline writes the call count and puts the session state. So what
//   a job writes into the session state (through its slot, copy on write as in stage.ts) is stored
//   with this call, and the session's next call, on any replica, reads it: the gateway answers
//   the client only after the put settled (PipelineResult.stored).
// - A job must not change what the call already returned: the body, receipts, token ids, block
//   hashes and diagnostics were sent or are read before the job may have run.
// - A job may be async (its promise is awaited before the next one). One that throws loses this
//   call's state write as a failed put would (said loudly, the answer still goes out); it is a bug
//   in the stage, never the client's error.
// Cost: one array push per job; one array per call that defers anything.

/** A piece of work for after the send. */
export type AfterSendJob = () => void | Promise<void>;

/** Hands a job to after the send (StageContext.afterSend). */
export type AfterSend = (job: AfterSendJob) => void;

/** Runs `job` after the send when the context has a queue, else now (same state, same order). */
export function afterSend(ctx: { afterSend?: AfterSend }, job: () => void): void {
  if (ctx.afterSend) ctx.afterSend(job);
  else job();
}

/** One call's jobs, run in order by the pipeline's state commit. */
export class AfterSendQueue {
  private jobs: AfterSendJob[] | undefined;

  /** Queues a job (a stage context carries it bound: `queue.add.bind(queue)`). */
  add(job: AfterSendJob): void {
    if (this.jobs === undefined) this.jobs = [job];
    else this.jobs.push(job);
  }

  get pending(): number {
    return this.jobs?.length ?? 0;
  }

  /** Runs the queued jobs in order (and any they queue); throws the first job's error. */
  async run(): Promise<void> {
    const jobs = this.jobs;
    if (jobs === undefined) return;
    for (let i = 0; i < jobs.length; i++) {
      const r = jobs[i]();
      if (r !== undefined) await r;
    }
    this.jobs = undefined;
  }
}
