// Session states share their parts between calls instead of serialising them: a store freezes the
// parts it is given, hands out copies of the top level with the parts shared, and sizes a state
// once per part. Checked here: what a caller changes after a put never reaches the store, a part
// written anew is stored, sizes match the JSON (escapes aside) and the quota store above charges
// what the memory store below holds, and stages that keep state write new parts instead of
// changing stored ones (a whole pipeline run over the memory store, which would throw otherwise).
import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../../middleware/canonical-json.ts';
import { freezeDeep, sizeOf } from '../../middleware/deep-freeze.ts';
import { createPipeline } from '../../middleware/pipeline.ts';
import { MemorySessionStore } from '../../middleware/session/memory-store.ts';
import { stateSize } from '../../middleware/session/shared-parts.ts';
import { readSlot, writeSlot, defineSlot } from '../../middleware/session/stage-state.ts';
import { SESSION_SCHEMA_VERSION, type SessionState } from '../../middleware/session/store.ts';
import { quotaSize, TenantQuotaStore } from '../../middleware/session/tenant-quota-store.ts';
import { randomSession, requestsOf } from './helpers/session-gen.ts';

const PAD = defineSlot<{ text: string; list: number[] }>('pad', 1);
const state = (calls: number): SessionState => ({
  schema: SESSION_SCHEMA_VERSION,
  tenant: 'A',
  sessionId: 's',
  model: 'm',
  rootHash: 'r',
  calls,
  updatedAt: 1,
  stages: { pad: { v: 1, s: { text: 'x'.repeat(100), list: [1, 2, 3] } } },
});

describe('shared, frozen session-state parts', () => {
  it('a put keeps the state as put; later changes to the top level do not reach the store; a new part does once put', async () => {
    const inner = new MemorySessionStore();
    const s = new TenantQuotaStore(inner, { maxSessions: 4, maxBytes: 1 << 20 });
    const st = state(1);
    await s.put(st);
    st.calls = 2;
    expect((await s.get('A', 's'))?.calls).toBe(1);
    expect(() => readSlot(st, PAD)!.list.push(4)).toThrow(TypeError);
    const got = (await s.get('A', 's'))!;
    got.calls = 3;
    writeSlot(got, PAD, { ...readSlot(got, PAD)!, list: [9] });
    expect(readSlot((await s.get('A', 's'))!, PAD)?.list).toEqual([1, 2, 3]);
    await s.put(got);
    const again = (await s.get('A', 's'))!;
    expect([again.calls, readSlot(again, PAD)?.list]).toEqual([3, [9]]);
    // Unchanged parts are the very objects stored before (shared, not copied).
    expect((await s.get('A', 's'))!.stages!.pad).toBe(again.stages!.pad);
  });

  it('drops a checksum the state carries', async () => {
    const s = new TenantQuotaStore(new MemorySessionStore(), { maxSessions: 4, maxBytes: 1 << 20 });
    await s.put({ ...state(3), checksum: 'abc' });
    const got = await s.get('A', 's');
    expect(got?.checksum).toBeUndefined();
    expect(got?.calls).toBe(3);
  });

  it('sizes are the JSON length without escapes, the same frozen or not, and the quota charges what the store holds', async () => {
    const values: unknown[] = [
      { a: 'plain', b: [1, 2.5, true, null, { c: 'd' }], e: undefined },
      ['x'.repeat(50), [], {}],
      { nested: { deeper: { list: ['one', 'two'], n: -12 } } },
    ];
    for (const v of values) {
      const plain = sizeOf(v);
      expect(plain).toBe(JSON.stringify(v).length);
      expect(sizeOf(freezeDeep(structuredClone(v)))).toBe(plain);
    }
    expect(sizeOf({ t: 'a\nb"c' })).toBe(JSON.stringify({ t: 'a\nb"c' }).length - 2);
    const inner = new MemorySessionStore();
    const q = new TenantQuotaStore(inner, { maxSessions: 4, maxBytes: 1 << 20 });
    const st = state(1);
    await q.put(st);
    expect(q.usage('A').bytes).toBe(quotaSize(st));
    expect(inner.stats().bytes).toBe(stateSize(st) + 'A\u0000s'.length);
  });

  it('canonical JSON of frozen parts is what it is for the same data unfrozen', () => {
    const data = { z: [{ b: 1, a: 'x'.repeat(5000) }, { y: 'short' }], a: { k: [1, 2, 3] } };
    const text = canonicalJson(data);
    const frozen = freezeDeep(structuredClone(data));
    expect(canonicalJson(frozen)).toBe(text);
    expect(canonicalJson({ wrap: frozen })).toBe(canonicalJson({ wrap: data }));
  });

  it('a pipeline run over a memory store never writes into a stored part (a frozen part would throw)', async () => {
    const store = new MemorySessionStore();
    const p = createPipeline({ model: 'm', tokenizer: 'qwen3', store, budgetTokens: 3000 });
    const ctx = { tenant: 't', requestId: 'r', headers: { 'x-session-id': 'frozen' }, model: 'm' };
    let last;
    const requests = requestsOf(randomSession(7, 24));
    // Then the last request again with an earlier message rewritten (no elision: passed through,
    // so the stable hashes differ in the middle, not only at the tail).
    const final = requests[requests.length - 1];
    const at = final.findIndex(
      (m, i) => i > 2 && i < final.length - 2 && typeof m.content === 'string' && m.content.length > 0,
    );
    const edited = final.map((m, i) => (i === at ? { ...m, content: `rewritten ${String(m.content).length}` } : m));
    for (const messages of [...requests, edited]) {
      last = await p.process({ model: 'm', messages }, ctx);
      // Parts sized from the previous call's sizes (stabilise, ledger, the fingerprint's hashes)
      // are charged what a walk of their plain copy gives.
      const plain = structuredClone(await store.get('t', 'frozen'));
      expect(store.stats().bytes).toBe(sizeOf(plain) + 't\u0000frozen'.length);
    }
    const st = (await store.get('t', 'frozen'))!;
    expect(at).toBeGreaterThan(2);
    expect(st.calls).toBe(requests.length + 1);
    expect(Object.keys(st.stages ?? {})).toEqual(
      expect.arrayContaining(['canonical_tools', 'stabilise', 'ledger', 'fingerprint', 'breaks']),
    );
    expect(last?.receipts.some((r) => r.stage === 'compaction') || st.stages?.compaction !== undefined).toBe(true);
  }, 120_000);
});
