// RouteInfo.sent for the gateway: the routing decision's index work (the chosen worker's prefix-index
// insert, kvplanner/deferred-work.ts postpone) runs once the request's body went upstream (its send
// gate, send-gate.ts), after the pipeline's state write, while the worker computes: ~30-40 µs a
// call of an agent's growing session that used to run before the send. Whatever reads the index
// first (the next decision, feedback, statistics) does it then instead, so routing stays exact.
// It never throws into the gate (undici's write callback): a failure is logged and counted
// (ctxgate_deferred_work_errors_total{kind="routing_index"}); the call goes on, and the index misses
// that chain as if the worker had evicted it. Work another reader did first (the next decision, a
// replica's batch) hands its error back here too (deferred-work.ts settleSoon): it is this
// request's, never the reader's. Cost: two bound functions a request.
import type { FastifyBaseLogger } from 'fastify';
import type { GatewayMetrics } from '../metrics.ts';
import type { SendGate } from './send-gate.ts';

/** RouteInfo.sent, bound per request: `run` waits for the gate (now when it is open). */
export function afterRouted(
  metrics: GatewayMetrics,
  gate: SendGate,
  log: FastifyBaseLogger,
  model: string,
  run: () => void,
): void {
  gate.whenRouted(routedWork.bind(undefined, metrics, log, model, run));
}

function routedWork(metrics: GatewayMetrics, log: FastifyBaseLogger, model: string, run: () => void): void {
  try {
    run();
  } catch (err) {
    log.error({ err }, 'routing: index work after the send failed');
    metrics.deferredWorkErrors.inc({ model, kind: 'routing_index' });
  }
}
