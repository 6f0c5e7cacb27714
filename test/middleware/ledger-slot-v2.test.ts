// LEDGER_SLOT v2 keeps the call records in chunks (ledger/call-log.ts); v1 kept them as a record
// keyed by id. A session stored as v1 before the upgrade must keep its observations and tombstones
// and so its exact prompt: the fixture is a session run by the v1 tree (main before the change),
// its stored state after call K, and what that tree sent upstream on the calls after K. Here the
// v1 state is put into a memory store and into a real redis-server (test/global-setup.ts), and the
// new pipeline must send the same bodies and receipts, then store the part as v2 with the same
// records in the same order. Also: the chunks themselves (append, replace in place, the bound).
import { describe, expect, it } from 'vitest';
import {
  CALL_CHUNK,
  callCount,
  callsRecord,
  findCall,
  fromV1Calls,
  withCalls,
} from '../../middleware/ledger/call-log.ts';
import { readLedger } from '../../middleware/ledger/slot.ts';
import { type CallRecord, LEDGER_SLOT } from '../../middleware/ledger/types.ts';
import { createPipeline } from '../../middleware/pipeline.ts';
import { MemorySessionStore } from '../../middleware/session/memory-store.ts';
import { readSlot } from '../../middleware/session/stage-state.ts';
import type { SessionStore } from '../../middleware/session/store.ts';
import type { Receipt } from '../../middleware/types.ts';
import { ctx, fixture, request, sessionStores, v1Part } from '../helpers/ledger-v1-fixture.ts';

const storeOf = sessionStores();

/** The new pipeline continuing the stored v1 session: bodies and receipts of the calls after K. */
async function continueOn(store: SessionStore, tenant: string): Promise<{ body: unknown; receipts: Receipt[] }[]> {
  await store.put({ ...structuredClone(fixture.stateAfterK), tenant });
  const p = createPipeline({ model: 'm', tokenizer: 'qwen3', store });
  const out: { body: unknown; receipts: Receipt[] }[] = [];
  for (const n of fixture.next) {
    const r = await p.process(request(n.call), ctx(n.call, tenant));
    out.push({ body: JSON.parse(JSON.stringify(r.body)), receipts: r.receipts });
  }
  return out;
}

describe('LEDGER_SLOT v2 (call records in chunks) and the v1 read migration', () => {
  it('the fixture is a v1 session with tombstones placed in its prompt', () => {
    expect(fixture.stateAfterK.stages?.ledger.v).toBe(1);
    expect(v1Part.tombstones.length).toBeGreaterThanOrEqual(3);
    const last = JSON.stringify(fixture.next[fixture.next.length - 1].body);
    for (const t of v1Part.tombstones) expect(last).toContain(JSON.stringify(t.text).slice(1, -1));
  });

  for (const kind of ['memory', 'redis'] as const) {
    it(`a session stored as v1 (${kind} store) keeps its tombstones and its exact prompt, then is stored as v2`, async () => {
      // Its own tenant per run: the shared redis-server may hold an earlier run's session.
      const tenant = `ledger-v2-${process.pid}-${Date.now()}`;
      const store = storeOf(kind);
      const got = await continueOn(store, tenant);
      expect(got).toEqual(fixture.next.map(({ body, receipts }) => ({ body, receipts })));
      const after = (await store.get(tenant, 'sess-v1'))!;
      expect(after.stages?.ledger.v).toBe(2);
      const part = readSlot(after, LEDGER_SLOT)!;
      expect(part.v).toBe(2);
      // Every v1 tombstone is still there, at its anchor, with its text; new ones come after.
      expect(part.tombstones.slice(0, v1Part.tombstones.length)).toEqual(v1Part.tombstones);
      // The v1 records, in their order, then the new calls' records.
      const flat = part.calls.flat();
      const v1Records = Object.entries(v1Part.calls).map(([id, r]) => [id, ...r]);
      expect(flat.slice(0, v1Records.length).sort()).toEqual([...v1Records].sort());
      if (kind === 'memory') expect(flat.slice(0, v1Records.length)).toEqual(v1Records);
      expect(flat.slice(v1Records.length).map((r) => r[0])).toEqual(fixture.next.map((n) => `call_${n.call}`));
      expect(part.calls.every((c) => c.length > 0 && c.length <= CALL_CHUNK)).toBe(true);
    });
  }

  it('a session run from its first call as v2 sends the same bodies as the v1 tree did', async () => {
    const p = createPipeline({ model: 'm', tokenizer: 'qwen3', store: new MemorySessionStore() });
    for (let k = 1; k <= fixture.K; k++) await p.process(request(k), ctx(k));
    for (const n of fixture.next) {
      const r = await p.process(request(n.call), ctx(n.call));
      expect(JSON.parse(JSON.stringify(r.body))).toEqual(n.body);
      expect(r.receipts).toEqual(n.receipts);
    }
  });

  it('readLedger reads v2 as is, v1 as v2 (fields and their order kept), nothing else', () => {
    const migrated = readLedger(fixture.stateAfterK)!;
    expect(Object.keys(migrated)).toEqual(Object.keys(v1Part));
    expect({ ...migrated, v: 1, calls: callsRecord(migrated.calls) }).toEqual(v1Part);
    const v2State = { ...fixture.stateAfterK, stages: { ledger: { v: 2, s: migrated } } };
    expect(readLedger(v2State)).toBe(migrated);
    expect(readLedger({ ...fixture.stateAfterK, stages: { ledger: { v: 3, s: migrated } } })).toBeUndefined();
  });
});

describe('call-log chunks', () => {
  const rec = (i: number, tag = ''): CallRecord => [`c${i}`, i, i % 3 === 0 ? null : 0, `h${i}${tag}`];
  const deepFreeze = (calls: CallRecord[][]) => Object.freeze(calls.map((c) => Object.freeze(c)));

  it('appends, replaces a known id in place, drops the oldest past the bound, never changes its input', () => {
    // A model: the v1 record (string keys keep their first insertion's place; the oldest dropped).
    const model = new Map<string, CallRecord>();
    let calls = deepFreeze([]) as CallRecord[][];
    let seed = 7;
    const rand = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % n;
    };
    const max = 300;
    for (let step = 0; step < 400; step++) {
      const before = JSON.stringify(calls);
      const added: CallRecord[] = [];
      const n = 1 + rand(3);
      for (let j = 0; j < n; j++) {
        const i = rand(4) === 0 && model.size > 0 ? rand(step * 3 + 1) : step * 3 + j;
        added.push(rec(i, `@${step}`));
      }
      const r = withCalls(calls, added, max);
      expect(JSON.stringify(calls)).toBe(before);
      for (const a of added) model.set(a[0], a);
      while (model.size > max) model.delete(model.keys().next().value!);
      expect(r.calls.flat()).toEqual([...model.values()]);
      expect(callCount(r.calls)).toBe(model.size);
      expect(r.calls.every((c) => c.length > 0 && c.length <= CALL_CHUNK)).toBe(true);
      // Chunks before `from` are the input's own (shared, not copied).
      for (let i = 0; i < Math.min(r.from, calls.length); i++) expect(r.calls[i]).toBe(calls[i]);
      for (const id of [...model.keys()].slice(-3)) expect(findCall(r.calls, id)).toEqual(model.get(id));
      expect(findCall(r.calls, 'absent')).toBeUndefined();
      calls = deepFreeze(r.calls) as CallRecord[][];
    }
    expect(withCalls(calls, [], max).calls).toBe(calls);
  });

  it('fromV1Calls keeps the record key order and chunks it', () => {
    const v1: Record<string, [number, number | null, string]> = {};
    for (let i = 0; i < 150; i++) v1[`id-${i}`] = [i, i % 2 ? null : 1, `h${i}`];
    const chunks = fromV1Calls(v1);
    expect(chunks.map((c) => c.length)).toEqual([CALL_CHUNK, CALL_CHUNK, 150 - 2 * CALL_CHUNK]);
    expect(callsRecord(chunks)).toEqual(v1);
    expect(Object.keys(callsRecord(chunks))).toEqual(Object.keys(v1));
  });
});
