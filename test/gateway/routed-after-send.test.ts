// The routing decision's work after the send (gateway/proxy/routed-after-send.ts, RouteInfo.sent):
// it runs when the send gate opens, after the pipeline's state write, or at once on an open gate;
// one that throws is logged and counted, and neither the gate nor the pipeline's work is harmed.
import type { FastifyBaseLogger } from 'fastify';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { createMetrics } from '../../gateway/metrics.ts';
import { afterRouted } from '../../gateway/proxy/routed-after-send.ts';
import { SendGate } from '../../gateway/proxy/send-gate.ts';

/** A logger that keeps what it is told at error level (the rest is dropped). */
function keptLog(): { log: FastifyBaseLogger; errors: unknown[][] } {
  const errors: unknown[][] = [];
  const none = (): void => undefined;
  const log = {
    error: (...a: unknown[]) => void errors.push(a),
    warn: none,
    info: none,
    debug: none,
    trace: none,
    fatal: none,
    level: 'info',
    silent: none,
    child: () => log,
  } as unknown as FastifyBaseLogger;
  return { log, errors };
}

describe('routing work after the send', () => {
  it('waits for the gate and runs after the pipeline work; at once on an open gate', () => {
    const metrics = createMetrics(new Registry());
    const { log } = keptLog();
    const gate = new SendGate();
    const order: string[] = [];
    afterRouted(metrics, gate, log, 'm', () => order.push('routing'));
    gate.when(() => order.push('pipeline'));
    expect(order).toEqual([]);
    gate.open();
    expect(order).toEqual(['pipeline', 'routing']);
    afterRouted(metrics, gate, log, 'm', () => order.push('again'));
    expect(order).toEqual(['pipeline', 'routing', 'again']);
  });

  it('a failure is logged and counted; the gate still runs the pipeline work', async () => {
    const registry = new Registry();
    const metrics = createMetrics(registry);
    const { log, errors } = keptLog();
    const gate = new SendGate();
    let stored = false;
    gate.when(() => {
      stored = true;
    });
    afterRouted(metrics, gate, log, 'm', () => {
      throw new Error('index broke');
    });
    expect(() => gate.open()).not.toThrow();
    expect(stored).toBe(true);
    expect(errors.length).toBe(1);
    expect(String((errors[0][0] as { err: Error }).err.message)).toBe('index broke');
    const text = await registry.metrics();
    expect(text).toMatch(/ctxgate_deferred_work_errors_total\{model="m",kind="routing_index"\} 1/);
  });
});
