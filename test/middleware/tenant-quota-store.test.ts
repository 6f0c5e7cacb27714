// TenantQuotaStore over a real MemorySessionStore: LRU within a tenant, byte quota per tenant,
// no cross-tenant eviction, reads count as use, an oversized state is not kept, deletes release.
import { describe, expect, it } from 'vitest';
import { MemorySessionStore } from '../../middleware/session/memory-store.ts';
import { paddedState } from '../helpers/session-state.ts';
import { quotaSize, TenantQuotaStore } from '../../middleware/session/tenant-quota-store.ts';

const state = paddedState;

describe('TenantQuotaStore', () => {
  it('evicts the least recently used session of the same tenant only', async () => {
    const inner = new MemorySessionStore();
    const evicted: string[] = [];
    const s = new TenantQuotaStore(inner, {
      maxSessions: 2,
      maxBytes: 1 << 20,
      onEvict: (t, id) => evicted.push(`${t}/${id}`),
    });
    await s.put(state('B', 'b1'));
    await s.put(state('A', 'a1'));
    await s.put(state('A', 'a2'));
    expect(await s.get('A', 'a1')).toBeDefined(); // a read makes a1 the most recent: a2 goes next
    for (let i = 3; i < 10; i++) await s.put(state('A', `a${i}`));
    expect(evicted).toEqual(['A/a2', 'A/a1', 'A/a3', 'A/a4', 'A/a5', 'A/a6', 'A/a7']);
    expect(await inner.get('B', 'b1')).toBeDefined();
    expect((await s.list('A')).sort()).toEqual(['a8', 'a9']);
    expect(await inner.get('A', 'a1')).toBeUndefined();
    expect(s.usage('A').sessions).toBe(2);
    expect(s.usage('B').sessions).toBe(1);
  });

  it('bounds the bytes of state per tenant and does not keep a state alone over the quota', async () => {
    const inner = new MemorySessionStore();
    const one = quotaSize(state('A', 's0', 'x'.repeat(100)));
    const s = new TenantQuotaStore(inner, { maxSessions: 100, maxBytes: 3 * one });
    for (let i = 0; i < 5; i++) await s.put(state('A', `s${i}`, 'x'.repeat(100)));
    expect((await s.list('A')).sort()).toEqual(['s2', 's3', 's4']);
    expect(s.usage('A').bytes).toBe(3 * one);
    // Rewriting a session charges its new size, not both.
    await s.put(state('A', 's4', 'x'.repeat(100)));
    expect(s.usage('A')).toEqual({ sessions: 3, bytes: 3 * one });
    // One huge state: everything older goes, and the huge one itself is not kept either.
    await s.put(state('B', 'keep'));
    await s.put(state('A', 's4', 'x'.repeat(10 * one)));
    expect(await s.list('A')).toEqual([]);
    expect(s.usage('A')).toEqual({ sessions: 0, bytes: 0 });
    expect(await s.get('B', 'keep')).toBeDefined();
    // The memory store never holds more than the tenant's quota for the tenant.
    expect(inner.stats().bytes).toBeLessThanOrEqual(3 * one + quotaSize(state('B', 'keep')));
  });

  it('charges at least what the memory store charges, so quota × tenants sizes it safely', async () => {
    const inner = new MemorySessionStore();
    const s = new TenantQuotaStore(inner);
    const st = { ...state('tenant-x', 'a-long-session-id', 'ünïcödé'), checksum: 'abc' };
    await s.put(st);
    expect(s.usage('tenant-x').bytes).toBeGreaterThanOrEqual(inner.stats().bytes);
  });

  it('delete releases the quota; a flood of ids from one tenant leaves the other untouched', async () => {
    const inner = new MemorySessionStore({ maxSessions: 2 * 50 });
    const s = new TenantQuotaStore(inner, { maxSessions: 50, maxTenants: 2 });
    await s.put(state('victim', 'v'));
    for (let i = 0; i < 5_000; i++) await s.put(state('attacker', `x${i}`));
    expect(await s.get('victim', 'v')).toBeDefined();
    expect(inner.stats().sessions).toBe(51);
    await s.delete('attacker', 'x4999');
    expect(s.usage('attacker').sessions).toBe(49);
    expect(await s.get('attacker', 'x4999')).toBeUndefined();
    await s.close();
  });
});
