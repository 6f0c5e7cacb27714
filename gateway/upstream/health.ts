// Active health checks: GET <worker><health path> (the engine adapter's) every interval; a non-2xx, an error or a timeout is a
// failure. Runs on its own small Agent so a saturated request pool cannot fail a healthy worker.
// Each change of a worker's state is logged once (warn when it stops answering or is ejected, info
// when it answers again), never once per round, so a dead worker cannot flood the log.
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

/** The two levels the checker logs at (pino's logger fits). */
export interface HealthLog {
  warn(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
}

interface Seen {
  answered?: boolean;
  healthy: boolean;
}

function logChange(w: Worker, answered: boolean, seen: Seen, log: HealthLog): void {
  const who = { model: w.model, worker: w.id };
  if (answered !== seen.answered) {
    if (!answered)
      log.warn({ ...who, url: w.url, error: w.lastErrors[w.lastErrors.length - 1]?.message }, 'worker unreachable');
    else if (seen.answered === false) log.info(who, 'worker answers again');
  }
  if (w.healthy !== seen.healthy) {
    if (!w.healthy)
      log.warn({ ...who, consecutive_failures: w.consecutiveFailures }, 'worker ejected: no requests are routed to it');
    else log.info(who, 'worker re-admitted');
  }
  seen.answered = answered;
  seen.healthy = w.healthy;
}

export function startHealthChecks(workers: Worker[], cfg: GatewayConfig['health'], log?: HealthLog): HealthChecker {
  const agent = new Agent({ connections: 1, keepAliveTimeout: 10_000, connect: { timeout: cfg.timeout_ms } });
  const seen = new Map<Worker, Seen>(workers.map((w) => [w, { healthy: w.healthy }]));
  let running: Promise<void> | undefined;
  const checkOne = async (w: Worker): Promise<void> => {
    const answered = await checkWorker(w, agent, cfg.timeout_ms);
    if (log) logChange(w, answered, seen.get(w)!, log);
  };
  const checkAll = (): Promise<void> => {
    running ??= Promise.all(workers.map(checkOne)).then(() => {
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
