// Shared builders for the kvplanner tests.
import type { RouteInfo, WorkerView } from '../../kvplanner/types.ts';

export function workers(n: number, over: Partial<WorkerView> = {}): WorkerView[] {
  return Array.from({ length: n }, (_, i) => ({
    id: `w${i}`,
    url: `http://127.0.0.1:${9000 + i}`,
    healthy: true,
    inFlight: 0,
    queuedPrefillTokens: 0,
    maxInFlight: 0,
    ...over,
  }));
}

/** Deterministic token ids: a shared root then a per-session body of `len` tokens. */
export function tokens(root: number, session: number, len: number): number[] {
  const out: number[] = [];
  for (let i = 0; i < root; i++) out.push(1000 + (i % 500));
  for (let i = 0; i < len; i++) out.push(10_000 + session * 7919 + i);
  return out;
}

export function info(over: Partial<RouteInfo> = {}): RouteInfo {
  return { model: 'm', tenant: 't', ...over };
}
