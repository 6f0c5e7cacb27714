// The resilient session store's marks (dirty-marks.ts) as its callers see them: list() never shows
// a session this replica deleted while the primary still holds it (its delete not yet written
// back), the states kept for write-back are bounded per tenant on their own (an outage longer
// than the local store's TTL left a mark per session put during it, its local copy long expired),
// a tenant's memory of write versions grows with its sessions, not with its quota, and a state
// Redis refuses (over its size limit) neither stops the write-back of the others nor counts as an
// outage.
// Real redis-server; a third store reads what other replicas would.
import { afterAll, describe, expect, inject, it } from 'vitest';
import type { SessionState } from '../../middleware/session/store.ts';
import { noteState } from '../fixtures/session-state.ts';
import { retainedMbAfter } from '../helpers/retained.ts';
import { replicaRig } from '../helpers/store-replica.ts';

const rig = replicaRig(inject('redisUrl'));
const { redis, replica } = rig;
afterAll(() => rig.close());

const state = (tenant: string, sessionId: string, calls: number): SessionState => ({
  ...noteState(sessionId, calls, 200),
  tenant,
});
const reader = redis();

/** Write-backs until nothing is pending (each call writes at most a bounded batch). */
async function drain(r: Awaited<ReturnType<typeof replica>>['r']): Promise<void> {
  for (let i = 0; i < 10 && r.pendingWriteBacks > 0; i++) await r.writeBack();
  expect(r.pendingWriteBacks).toBe(0);
}

describe('list() after a delete the primary has not had', () => {
  it('does not show the deleted session, before or after the write-back', async () => {
    const a = replica();
    for (const id of ['l-keep', 'l-gone']) await a.r.put(state('lt', id, 1));
    a.down = true;
    await a.r.delete('lt', 'l-gone');
    expect(await a.r.list('lt')).toEqual(['l-keep']); // the local store's list
    a.down = false;
    expect((await reader.list('lt')).sort()).toEqual(['l-gone', 'l-keep']); // Redis still holds it
    expect(await a.r.list('lt')).toEqual(['l-keep']);
    await drain(a.r);
    expect(await reader.list('lt')).toEqual(['l-keep']);
    expect(await a.r.list('lt')).toEqual(['l-keep']);
  });

  it('a full page stays full: the hidden sessions do not take the places of listed ones', async () => {
    const a = replica();
    for (let i = 0; i < 6; i++) await a.r.put(state('lp', `lp-${i}`, 1));
    a.down = true;
    for (let i = 0; i < 3; i++) await a.r.delete('lp', `lp-${i}`);
    a.down = false;
    expect((await a.r.list('lp', 3)).sort()).toEqual(['lp-3', 'lp-4', 'lp-5']);
  });
});

describe('states kept for write-back are bounded per tenant', () => {
  it("past the bound a tenant's least recently marked state is forgotten; another tenant's stay", async () => {
    const a = replica(2);
    for (const id of ['b-0', 'b-1']) await a.r.put(state('bt', id, 1));
    await a.r.put(state('bu', 'b-u', 1));
    a.down = true;
    await a.r.put(state('bu', 'b-u', 2));
    await a.r.put(state('bt', 'b-0', 2));
    await a.r.put(state('bt', 'b-1', 2));
    await a.r.put(state('bt', 'b-0', 3)); // marked again: bt's most recent, b-1 its oldest
    await a.r.put(state('bt', 'b-2', 1)); // a session started during the outage
    expect(a.r.pendingWriteBacks).toBe(3); // bt's b-0 and b-2, bu's b-u
    a.down = false;
    await drain(a.r);
    expect((await reader.get('bu', 'b-u'))?.calls).toBe(2);
    expect((await reader.get('bt', 'b-0'))?.calls).toBe(3);
    expect((await reader.get('bt', 'b-2'))?.calls).toBe(1);
    expect((await reader.get('bt', 'b-1'))?.calls).toBe(1); // its outage state forgotten
    // a long outage: marks stay at the bound however many sessions the tenant starts
    a.down = true;
    for (let i = 0; i < 50; i++) await a.r.put(state('bt', `b-new-${i}`, 1));
    expect(a.r.pendingWriteBacks).toBe(2);
    a.down = false;
    await drain(a.r);
    expect((await reader.list('bt', 100)).sort()).toEqual(['b-0', 'b-1', 'b-2', 'b-new-48', 'b-new-49']);
  });
});

describe('write versions are remembered per tenant', () => {
  it('a tenant with one session holds memory for one, not for its whole quota', async () => {
    // An LRUCache a tenant (max: the quota, 10,000 by default) held ~164 KB of heap for each
    // tenant that ever wrote one session (lru-cache allocates its capacity up front).
    const a = replica();
    const TENANTS = 200;
    const mb = await retainedMbAfter(async () => {
      for (let i = 0; i < TENANTS; i++) await a.r.put(state(`vt-${i}`, 'one', 1));
    });
    expect((mb * 1e3) / TENANTS, 'KB held a tenant').toBeLessThan(20); // an entry in each store: ~3 KB
  });
});

describe("a state over the primary's size limit", () => {
  it("stays this replica's, is not an outage, and does not stop the write-back of other sessions", async () => {
    const a = replica(undefined, 4_000);
    await a.r.put(state('zt', 'z-big', 1));
    await a.r.put({ ...state('zt', 'z-big', 2), stages: { ledger: { v: 1, s: 'x'.repeat(10_000) } } });
    expect(a.r.primaryHealthy).toBe(true); // refused, not down
    expect(a.r.pendingWriteBacks).toBe(0); // nothing a write-back could write
    expect((await a.r.get('zt', 'z-big'))?.calls).toBe(2); // its own copy, not Redis's older one
    expect((await reader.get('zt', 'z-big'))?.calls).toBe(1);
    // an outage: another tenant's session kept, then written back after it
    a.down = true;
    await a.r.put(state('zu', 'z-small', 1));
    a.down = false;
    await drain(a.r);
    expect((await reader.get('zu', 'z-small'))?.calls).toBe(1);
    // the big session's next write that fits lands as any other
    await a.r.put(state('zt', 'z-big', 3));
    expect((await reader.get('zt', 'z-big'))?.calls).toBe(3);
  });
});
