// Active health checks: GET <worker><health path> (the engine adapter's) every interval; a non-2xx, an error or a timeout is a
// failure. Runs on its own small Agent so a saturated request pool cannot fail a healthy worker.
import { Agent, request } from 'undici';
import type { GatewayConfig } from '../config/schema.ts';
import type { Worker } from './worker.ts';

export interface HealthChecker {
  /** Runs one round now (tests, startup). */
  checkAll(): Promise<void>;
  stop(): Promise<void>;
}

export async function checkWorker(worker: Worker, agent: Agent, timeoutMs: number): Promise<boolean> {
  try {
    const res = await request(`${worker.url}${worker.healthPath}`, {
      method: 'GET',
      dispatcher: agent,
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
      signal: AbortSignal.timeout(timeoutMs),
    });
    await res.body.dump();
    if (res.statusCode >= 200 && res.statusCode < 300) {
      worker.recordSuccess(true);
      return true;
    }
    worker.recordFailure(`health check: HTTP ${res.statusCode}`);
  } catch (err) {
    worker.recordFailure(`health check: ${(err as Error).message}`);
  }
  return false;
}

export function startHealthChecks(workers: Worker[], cfg: GatewayConfig['health']): HealthChecker {
  const agent = new Agent({ connections: 1, keepAliveTimeout: 10_000, connect: { timeout: cfg.timeout_ms } });
  let running: Promise<void> | undefined;
  const checkAll = (): Promise<void> => {
    running ??= Promise.all(workers.map((w) => checkWorker(w, agent, cfg.timeout_ms))).then(() => {
      running = undefined;
    });
    return running;
  };
  const timer = cfg.interval_ms > 0 ? setInterval(() => void checkAll(), cfg.interval_ms) : undefined;
  timer?.unref();
  return {
    checkAll,
    async stop() {
      if (timer) clearInterval(timer);
      await running?.catch(() => undefined);
      await agent.close().catch(() => undefined);
    },
  };
}
