// Session write versions (redis-delta-scripts.ts): every write of a session gets a larger version,
// from any replica, and after a delete or an expiry one larger than any before; a replica's
// write-back of a state kept during its outage (resilient-store.ts) lands only if no write landed
// after the one its state continues. The calls/updatedAt rule it replaces misordered three cases
// tested here: a session deleted or expired and started again by another replica, a replica's clock
// ahead at equal calls, and two replicas' outages from the same version. Real redis-server, two
// writers (and a third store that reads what other replicas would).
import { afterAll, describe, expect, inject, it } from 'vitest';
import { redisKey } from '../../middleware/session/redis-store.ts';
import type { SessionState } from '../../middleware/session/store.ts';
import { noteState } from '../fixtures/session-state.ts';
import { replicaRig } from '../helpers/store-replica.ts';
import { until } from '../helpers/until.ts';

const rig = replicaRig(inject('redisUrl'));
const { redis, replica } = rig;
afterAll(() => rig.close());

const state = (sessionId: string, calls: number, more: Partial<SessionState> = {}): SessionState => ({
  ...noteState(sessionId, calls, 500),
  ...more,
});

const reader = redis();

async function expire(id: string): Promise<void> {
  await reader.client.pexpire(redisKey('t', id), 1);
  await until(async () => (await reader.client.exists(redisKey('t', id))) === 0);
}

describe('session write versions', () => {
  it('grow with every write of a session, from either replica, and past a delete and an expiry', async () => {
    const [a, b] = [redis(), redis()];
    const seen: number[] = [];
    for (let i = 1; i <= 6; i++) {
      const st = state('wv-mono', i);
      await (i % 2 ? a : b).put(st);
      seen.push(st.version ?? Number.NaN);
      expect((await (i % 2 ? b : a).get('t', 'wv-mono'))?.version).toBe(st.version);
    }
    await a.delete('t', 'wv-mono');
    const again = state('wv-mono', 1);
    await b.put(again);
    seen.push(again.version ?? Number.NaN);
    await expire('wv-mono');
    const third = state('wv-mono', 1);
    await a.put(third);
    seen.push(third.version ?? Number.NaN);
    for (let i = 1; i < seen.length; i++) expect(seen[i]).toBeGreaterThan(seen[i - 1]);
    // the version is the store's, not part of the state: an unchanged read (no head sent) has it too
    expect((await a.get('t', 'wv-mono'))?.version).toBe(third.version);
  });

  it('a write-back lands when nothing was written since the write its state continues', async () => {
    const a = replica();
    await a.r.put(state('wv-own', 4));
    a.down = true;
    await a.r.put(state('wv-own', 5));
    await a.r.put(state('wv-own', 6));
    a.down = false;
    expect(await a.r.writeBack()).toBe(1);
    expect((await reader.get('t', 'wv-own'))?.calls).toBe(6);
    // written through: the next outage's states continue that write, and land too
    a.down = true;
    await a.r.put(state('wv-own', 7));
    a.down = false;
    expect(await a.r.writeBack()).toBe(1);
    expect((await reader.get('t', 'wv-own'))?.calls).toBe(7);
  });

  for (const how of ['deleted', 'expired'] as const)
    it(`a session ${how} and started again by another replica is not overwritten by a state kept from before`, async () => {
      const id = `wv-${how}`;
      const [a, b] = [replica(), redis()];
      await a.r.put(state(id, 5));
      a.down = true;
      await a.r.put(state(id, 6));
      if (how === 'deleted') await b.delete('t', id);
      else await expire(id);
      await b.put(state(id, 1, { model: 'again' }));
      a.down = false;
      expect(await a.r.writeBack()).toBe(0);
      expect(await reader.get('t', id)).toMatchObject({ calls: 1, model: 'again' });
      expect(await a.r.get('t', id)).toMatchObject({ calls: 1, model: 'again' });
    });

  it("a replica's clock ahead does not make its kept state win at equal calls", async () => {
    const [a, b] = [replica(), redis()];
    await a.r.put(state('wv-skew', 3));
    a.down = true;
    const base = state('wv-skew', 4);
    await a.r.put({ ...base, updatedAt: base.updatedAt + 3_600_000, model: 'ahead' });
    await b.put({ ...base, model: 'b' });
    a.down = false;
    expect(await a.r.writeBack()).toBe(0);
    expect((await reader.get('t', 'wv-skew'))?.model).toBe('b');
  });

  it("two replicas' outages from the same version: the first write-back lands, the second yields", async () => {
    const [a, b] = [replica(), replica()];
    await a.r.put(state('wv-two', 3));
    expect((await b.r.get('t', 'wv-two'))?.calls).toBe(3);
    a.down = b.down = true;
    await a.r.put(state('wv-two', 4));
    await a.r.put(state('wv-two', 5));
    await b.r.put(state('wv-two', 4, { model: 'b' }));
    b.down = false;
    // b's read while its write-back runs: its kept state, before or after it lands (Redis holds
    // the version it continues, then the state itself)
    const [written, read] = await Promise.all([b.r.writeBack(), b.r.get('t', 'wv-two')]);
    expect(written).toBe(1);
    expect(read?.model).toBe('b');
    a.down = false;
    // more calls do not help a: its state continues a version b's write-back superseded
    expect(await a.r.writeBack()).toBe(0);
    expect(await reader.get('t', 'wv-two')).toMatchObject({ calls: 4, model: 'b' });
    expect(await a.r.get('t', 'wv-two')).toMatchObject({ calls: 4, model: 'b' });
  });
  it("another tenant's many sessions do not make a tenant's outage write yield (versions kept per tenant)", async () => {
    // A global memory of versions (10,000 for all tenants) forgot this session once another tenant
    // had touched 10,001 (review s39 F2): its write-back then continued no version and yielded, and
    // Redis kept calls 5. Kept per tenant, bounded as the local store's per-tenant quota.
    const a = replica(8);
    await a.r.put(state('wv-tenants', 5));
    for (let i = 0; i < 20; i++) await a.r.put({ ...state(`wv-other-${i}`, 1), tenant: 'other' });
    a.down = true;
    await a.r.put(state('wv-tenants', 6));
    a.down = false;
    expect(await a.r.writeBack()).toBe(1);
    expect((await reader.get('t', 'wv-tenants'))?.calls).toBe(6);
    // within a tenant the bound holds: a session its own tenant pushed out of the memory yields
    await a.r.put(state('wv-own-bound', 5));
    for (let i = 0; i < 8; i++) await a.r.put(state(`wv-own-${i}`, 1));
    a.down = true;
    await a.r.put(state('wv-own-bound', 6));
    a.down = false;
    expect(await a.r.writeBack()).toBe(0);
    expect((await reader.get('t', 'wv-own-bound'))?.calls).toBe(5);
  });
});
