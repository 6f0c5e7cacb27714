// bench chaos: what the gateway's late-binding gate and its view of each worker looked like, once
// every TIMELINE_EVERY_MS during the faults, read from the gateway's own routes (/metrics,
// /v1/gateway/workers) the way an operator would. Printed for the seconds around hung calls, so a
// call that got no byte for 15 s shows whether it waited at the gate (held, which workers could
// admit) or at a worker. Cost: two small GETs per tick; at most TIMELINE_MAX ticks kept.
import { Agent, request } from 'undici';

export const TIMELINE_EVERY_MS = 500;
const TIMELINE_MAX = 2_400;

export interface WorkerTick {
  id: string;
  healthy: boolean;
  inFlight: number;
  waiting?: number;
  running?: number;
  kvUsage?: number;
}

export interface GateTick {
  /** ms since the faults began */
  atMs: number;
  held?: number;
  /** cumulative ctxgate_admission_outcomes_total by outcome */
  outcomes: Record<string, number>;
  workers: WorkerTick[];
}

const OUTCOME = /^ctxgate_admission_outcomes_total\{[^}]*outcome="([a-z_]+)"[^}]*\}\s+(\S+)/;
const HELD = /^ctxgate_admission_held\{[^}]*\}\s+(\S+)/;

/** The gate's held gauge and outcome counters from a Prometheus text page (summed over models). */
export function parseGateMetrics(text: string): { held?: number; outcomes: Record<string, number> } {
  let held: number | undefined;
  const outcomes: Record<string, number> = {};
  for (const line of text.split('\n')) {
    const h = HELD.exec(line);
    if (h) held = (held ?? 0) + Number(h[1]);
    const o = OUTCOME.exec(line);
    if (o) outcomes[o[1]] = (outcomes[o[1]] ?? 0) + Number(o[2]);
  }
  return { held, outcomes };
}

interface WorkersPage {
  models?: {
    workers?: {
      id: string;
      healthy: boolean;
      inFlight: number;
      engine?: Omit<WorkerTick, 'id' | 'healthy' | 'inFlight'>;
    }[];
  }[];
}

async function text(url: string, dispatcher: Agent): Promise<string> {
  const r = await request(url, { dispatcher, headersTimeout: 2_000, bodyTimeout: 2_000 });
  return r.body.text();
}

/** Polls `gatewayUrl` until stop(); a tick whose GETs fail is skipped (the gateway is busy). */
export function startGateTimeline(gatewayUrl: string, t0: number): { stop(): GateTick[] } {
  const ticks: GateTick[] = [];
  // its own connections, closed at stop(): kept alive (the gateway offers 72 s) they would count
  // among the gateway's sockets at the end reading
  const agent = new Agent();
  let busy = false;
  const timer = setInterval(() => {
    if (busy || ticks.length >= TIMELINE_MAX) return;
    busy = true;
    const atMs = Date.now() - t0;
    Promise.all([text(`${gatewayUrl}/metrics`, agent), text(`${gatewayUrl}/v1/gateway/workers`, agent)])
      .then(([m, w]) => {
        const page = JSON.parse(w) as WorkersPage;
        const workers = (page.models ?? []).flatMap((x) => x.workers ?? []);
        ticks.push({
          atMs,
          ...parseGateMetrics(m),
          workers: workers.map((v) => ({ id: v.id, healthy: v.healthy, inFlight: v.inFlight, ...v.engine })),
        });
      })
      .catch(() => undefined)
      .finally(() => {
        busy = false;
      });
  }, TIMELINE_EVERY_MS);
  timer.unref();
  return {
    stop: () => {
      clearInterval(timer);
      void agent.close();
      return ticks;
    },
  };
}

/** One line per tick from `fromMs` to `toMs`: held, new outcomes since the tick before, each worker. */
export function formatTimeline(ticks: readonly GateTick[], fromMs: number, toMs: number): string[] {
  const out: string[] = [];
  let prev: GateTick | undefined;
  for (const t of ticks) {
    if (t.atMs >= fromMs && t.atMs <= toMs) {
      const delta = Object.entries(t.outcomes)
        .map(([k, n]) => [k, n - (prev?.outcomes[k] ?? 0)] as const)
        .filter(([, n]) => n > 0)
        .map(([k, n]) => `${k} ${n}`)
        .join(', ');
      const ws = t.workers
        .map(
          (w) =>
            `${w.id}${w.healthy ? '' : '(out)'} f${w.inFlight}` +
            (w.waiting !== undefined || w.running !== undefined ? ` w${w.waiting ?? '-'}/r${w.running ?? '-'}` : ' -') +
            (w.kvUsage !== undefined ? ` kv${Math.round(w.kvUsage * 100)}%` : ''),
        )
        .join(' | ');
      out.push(
        `  ${(t.atMs / 1000).toFixed(1).padStart(5)}s held ${t.held ?? '?'}${delta ? ` (${delta})` : ''}: ${ws}`,
      );
    }
    prev = t;
  }
  return out;
}
