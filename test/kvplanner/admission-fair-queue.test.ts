// The gateway-side queue of late binding: per-tenant round robin, each tenant's calls in order,
// bounds that refuse at once, deadlines that hand calls back, and a look past busy calls
// (takeFirst) that keeps the passed-over ones in place. Plus the worker check (canAdmit).
import { describe, expect, it } from 'vitest';
import { ADMISSION_DEFAULTS } from '../../kvplanner/admission/admission-defaults.ts';
import { admissibleWorkers, canAdmit } from '../../kvplanner/admission/can-admit.ts';
import { FairQueue } from '../../kvplanner/admission/fair-queue.ts';
import type { WorkerView } from '../../kvplanner/types.ts';

const open = { maxQueued: 100, maxPerTenant: 100, maxWaitMs: Infinity };

describe('FairQueue', () => {
  it('serves tenants in turn, each tenant in arrival order', () => {
    const q = new FairQueue<string>(open);
    for (const x of ['a1', 'a2', 'a3', 'a4']) q.push('a', x, 0);
    q.push('b', 'b1', 1);
    q.push('c', 'c1', 2);
    q.push('b', 'b2', 3);
    expect(q.size).toBe(7);
    expect(q.peek()).toBe('a1');
    expect(q.drain()).toEqual(['a1', 'b1', 'c1', 'a2', 'b2', 'a3', 'a4']);
    expect(q.size).toBe(0);
    expect(q.shift()).toBeUndefined();
  });

  it('refuses at once beyond its bounds, in total and per tenant', () => {
    const q = new FairQueue<number>({ maxQueued: 3, maxPerTenant: 2, maxWaitMs: Infinity });
    expect(q.push('a', 1, 0)).toBe('queued');
    expect(q.push('a', 2, 0)).toBe('queued');
    expect(q.push('a', 3, 0)).toBe('tenant_full');
    expect(q.push('b', 4, 0)).toBe('queued');
    expect(q.push('c', 5, 0)).toBe('queue_full');
    expect(q.sizeOf('a')).toBe(2);
    expect(q.size).toBe(3);
    q.shift();
    expect(q.push('a', 6, 0)).toBe('queued');
  });

  it('hands back the calls past their deadline, and only those', () => {
    const q = new FairQueue<string>({ maxQueued: 10, maxPerTenant: 10, maxWaitMs: 100 });
    q.push('a', 'a0', 0);
    q.push('b', 'b0', 10);
    q.push('a', 'a50', 50);
    q.push('b', 'b200', 200);
    expect(q.expire(100)).toEqual([]);
    expect(q.expire(111)).toEqual(['a0', 'b0']);
    expect(q.size).toBe(2);
    expect(q.expire(151)).toEqual(['a50']);
    expect(q.drain()).toEqual(['b200']);
  });

  it('takeFirst takes the first call accepted within the window; the passed-over keep their place', () => {
    const q = new FairQueue<number>(open);
    for (let i = 0; i < 6; i++) q.push('a', i, i * 10);
    q.push('b', 100, 0);
    const waits: number[] = [];
    expect(
      q.takeFirst(
        (x, waited) => {
          waits.push(waited);
          return x === 3;
        },
        70,
        4,
      ),
    ).toBe(3);
    expect(waits).toEqual([70, 60, 50, 40]); // a0..a3, in order, with how long each had waited
    // tenant a went to the back of the round after its take: tenant b is looked at first
    expect(q.takeFirst((x) => x === 5 || x === 100, 70, 3)).toBe(100);
    expect(q.takeFirst(() => false, 70, 10)).toBeUndefined();
    expect(q.drain()).toEqual([0, 1, 2, 4, 5]);
  });

  it('stays in order over many pushes and shifts (the FIFO compacts)', () => {
    const q = new FairQueue<number>({ maxQueued: 1e6, maxPerTenant: 1e6, maxWaitMs: Infinity });
    const out: number[] = [];
    for (let i = 0; i < 1000; i++) {
      q.push('a', i, i);
      if (i % 3 === 2) out.push(q.shift()!, q.shift()!);
    }
    out.push(...q.drain());
    expect(out).toEqual(Array.from({ length: 1000 }, (_, i) => i));
  });
});

describe('canAdmit', () => {
  const view = (over: Partial<WorkerView>): WorkerView => ({
    id: 'w0',
    url: 'http://w0',
    healthy: true,
    inFlight: 0,
    queuedPrefillTokens: 0,
    maxInFlight: 0,
    ...over,
  });
  const s = { max_waiting: 2, max_kv_usage: 0.9 };

  it('admits below max_waiting and max_kv_usage, never an unhealthy or full worker', () => {
    expect(canAdmit(view({ engine: { waiting: 1, kvUsage: 0.5 } }), s)).toBe(true);
    expect(canAdmit(view({ engine: { waiting: 2, kvUsage: 0.5 } }), s)).toBe(false);
    expect(canAdmit(view({ engine: { waiting: 0, kvUsage: 0.9 } }), s)).toBe(false);
    expect(canAdmit(view({ healthy: false }), s)).toBe(false);
    expect(canAdmit(view({ maxInFlight: 3, inFlight: 3 }), s)).toBe(false);
    expect(canAdmit(view({}), s)).toBe(true); // no engine signals: nothing says no
    const ws = [view({ id: 'a', engine: { waiting: 5 } }), view({ id: 'b', engine: { waiting: 0 } })];
    expect(admissibleWorkers(ws, s).map((w) => w.id)).toEqual(['b']);
  });

  it('defaults are named once and sane', () => {
    expect(ADMISSION_DEFAULTS.max_waiting).toBeGreaterThanOrEqual(1);
    expect(ADMISSION_DEFAULTS.max_kv_usage).toBeLessThanOrEqual(1);
    expect(ADMISSION_DEFAULTS.max_queued_per_tenant).toBeLessThanOrEqual(ADMISSION_DEFAULTS.max_queued);
  });
});
