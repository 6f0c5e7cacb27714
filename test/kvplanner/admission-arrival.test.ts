// The bind-at-arrival rule and the holder read, written once for the gate and the fleet simulator
// (kvplanner/admission/arrival.ts): the home is the worker holding most of the prompt, counted by
// what it holds beyond the runner-up; a call binds to it at arrival only when that lead is at
// least locality_min_tokens and no other tenant holds calls.
import { describe, expect, it } from 'vitest';
import { bindsAtArrival, localityHome, readHolders } from '../../kvplanner/admission/arrival.ts';
import { FairQueue } from '../../kvplanner/admission/fair-queue.ts';
import type { Policy, RouteInfo, WorkerView } from '../../kvplanner/types.ts';

const view = (id: string): WorkerView => ({
  id,
  url: `http://${id}`,
  healthy: true,
  inFlight: 0,
  queuedPrefillTokens: 0,
  maxInFlight: 0,
});
const ws = [view('w0'), view('w1'), view('w2')];
const table = (cached: Record<string, number>): Policy =>
  ({
    name: 'table',
    select: (w: readonly WorkerView[]) => ({ worker: w[0], branch: 'x' }),
    expectedCachedTokens: (w: readonly WorkerView[]) => cached[w[0].id] ?? 0,
  }) as unknown as Policy;
const info: RouteInfo = { model: 'm', tenant: 'a', promptTokens: 10_000 };
const s = { locality_min_tokens: 1024 };

describe('arrival (the gate and the simulator alike)', () => {
  it('readHolders: the home, its lead over the runner-up and the top; nothing without an index', () => {
    const scratch: number[] = [];
    expect(readHolders(table({ w0: 2_000, w1: 6_000, w2: 4_000 }), ws, info, scratch)).toEqual({
      home: 1,
      lead: 2_000,
      top: 6_000,
    });
    expect(scratch).toEqual([2_000, 6_000, 4_000]);
    // a root every worker holds: no lead, still the top
    expect(readHolders(table({ w0: 3_000, w1: 3_000, w2: 3_000 }), ws, info, scratch)).toEqual({
      home: 0,
      lead: 0,
      top: 3_000,
    });
    const none = { name: 'none', select: () => null } as unknown as Policy;
    expect(readHolders(none, ws, info, scratch)).toEqual({ home: -1, lead: 0, top: 0 });
  });

  it('binds at arrival only with a lead of locality_min_tokens and no other tenant holding calls', () => {
    const q = new FairQueue<string>({ maxQueued: 10, maxPerTenant: 10, maxWaitMs: Infinity });
    const lead = { home: 2, lead: 1024, top: 5_000 };
    const short = { home: 2, lead: 1023, top: 5_000 };
    expect(localityHome(lead, s)).toBe(2);
    expect(localityHome(short, s)).toBe(-1);
    expect(bindsAtArrival(lead, 'a', q, s)).toBe(true);
    expect(bindsAtArrival(short, 'a', q, s)).toBe(false);
    // its own tenant's held calls do not stop it; another tenant's do
    q.push('a', 'a1', 0);
    expect(bindsAtArrival(lead, 'a', q, s)).toBe(true);
    q.push('b', 'b1', 0);
    expect(bindsAtArrival(lead, 'a', q, s)).toBe(false);
  });
});
