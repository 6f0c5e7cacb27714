// Which call records the ledger keeps at its bound (DEFAULT_MAX_CALL_RECORDS), with the state
// stored between calls in memory and in a real redis-server. LEDGER_SLOT v2 keeps the records in
// the order the calls were first seen and drops the oldest. v1 (a record keyed by id) dropped the
// first keys in JS key order, which was not call order: integer-like ids ("913") came first in
// memory, and the Redis codec returned the keys sorted (call_1000 before call_119), so v1 dropped
// other records after a Redis round trip than in memory, and replicas could disagree. Compaction
// reads these records for its milestones and audit, so the kept set is output. Also: ids that are
// Object.prototype's names are records like any other (callsRecord has no prototype).
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { callsRecord, findCall, withCalls } from '../../middleware/ledger/call-log.ts';
import { DEFAULT_MAX_CALL_RECORDS } from '../../middleware/ledger/ledger.ts';
import { readLedger, writeLedger } from '../../middleware/ledger/slot.ts';
import { type CallRecord, emptyLedger } from '../../middleware/ledger/types.ts';
import type { SessionState } from '../../middleware/session/store.ts';
import { sessionStores } from '../helpers/ledger-v1-fixture.ts';

const base = (
  JSON.parse(readFileSync(new URL('../fixtures/ledger-v1-session.json', import.meta.url), 'utf8')) as {
    stateAfterK: SessionState;
  }
).stateAfterK;
const storeOf = sessionStores();

/** Records of calls 1..n in call order; every 7th id integer-like, the rest `call_N`. */
const records = (from: number, to: number): CallRecord[] =>
  Array.from({ length: to - from + 1 }, (_, i) => {
    const n = from + i;
    return [n % 7 === 0 ? String(n) : `call_${n}`, n, n % 5 === 0 ? 1 : 0, `h${n}`] as const;
  });

describe('the call-record bound keeps the newest calls, in memory and through Redis', () => {
  for (const kind of ['memory', 'redis'] as const) {
    it(`${kind}: a full ledger stored, read back and given 4 more calls drops the 4 oldest`, async () => {
      const store = storeOf(kind);
      const tenant = `ledger-bound-${process.pid}-${Date.now()}`;
      const first = records(1, DEFAULT_MAX_CALL_RECORDS);
      const { calls } = withCalls([], first, DEFAULT_MAX_CALL_RECORDS);
      const state: SessionState = { ...structuredClone(base), tenant, sessionId: 'bound', stages: {} };
      writeLedger(state, { ...emptyLedger(), calls }, 2);
      await store.put(state);
      const back = readLedger((await store.get(tenant, 'bound'))!)!;
      // Call order survives the store (v1's record came back from Redis with its keys sorted).
      expect(back.calls.flat()).toEqual(first);
      const next = withCalls(
        back.calls,
        records(DEFAULT_MAX_CALL_RECORDS + 1, DEFAULT_MAX_CALL_RECORDS + 4),
        DEFAULT_MAX_CALL_RECORDS,
      );
      const kept = next.calls.flat();
      expect(kept).toEqual(records(5, DEFAULT_MAX_CALL_RECORDS + 4));
      // The oldest went, whatever their ids sort like: '7' (integer-like), call_1..4; call_1000 stays.
      for (const id of ['call_1', 'call_2', 'call_3', 'call_4']) expect(findCall(next.calls, id)).toBeUndefined();
      for (const id of ['7', 'call_5', 'call_1000', 'call_118', '119', '4095'])
        expect(findCall(next.calls, id), id).toBeDefined();
    });
  }

  it("ids named like Object.prototype's members are records like any other", () => {
    const ids = ['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'call_1'];
    const { calls } = withCalls(
      [],
      ids.map((id, i) => [id, i + 1, 0, `h${i}`] as const),
      DEFAULT_MAX_CALL_RECORDS,
    );
    const rec = callsRecord(calls);
    expect(Object.keys(rec)).toEqual(ids);
    for (const [i, id] of ids.entries()) expect(rec[id], id).toEqual([i + 1, 0, `h${i}`]);
    // an id with no record is absent, not an inherited member
    const none = callsRecord(withCalls([], [['call_1', 1, 0, 'h']], DEFAULT_MAX_CALL_RECORDS).calls);
    for (const id of ['constructor', 'toString', 'valueOf']) expect(none[id], id).toBeUndefined();
    expect(JSON.parse(JSON.stringify(rec))).toEqual(Object.fromEntries(ids.map((id, i) => [id, [i + 1, 0, `h${i}`]])));
  });
});
