// The ledger's lists that a call usually leaves as they were (the pending invalidations once
// emptied, the evictions without a cost model, the open calls once every result came back, an
// observation's empty reads or writes) stay the previous state's frozen objects or one shared
// frozen empty list, so the store's put has nothing new to freeze there; where a call does change
// one it writes its own copy, and the previous state, frozen as a store holds it, is never changed.
import { describe, expect, it } from 'vitest';
import { freezeDeep, isDeepFrozen } from '../../middleware/deep-freeze.ts';
import { DEFAULT_EVICTION_COST_MODEL } from '../../middleware/ledger/cost-model.ts';
import { applyLedger, invalidate } from '../../middleware/ledger/ledger.ts';
import type { LedgerState } from '../../middleware/ledger/types.ts';
import type { ChatMessage } from '../../middleware/types.ts';
import { fixItSession, requestsOf } from './helpers/session-gen.ts';

const session = fixItSession();

/** Each call's state deep-frozen as a store holds it, the next call built on it. */
function replay(msgs: ChatMessage[], opts: Parameters<typeof applyLedger>[2] = {}) {
  const states: LedgerState[] = [];
  let state: LedgerState | undefined;
  for (const req of requestsOf(msgs)) {
    state = freezeDeep(applyLedger(req, state, { now: 0, ...opts }).state);
    states.push(state);
  }
  return states;
}

describe('ledger lists a call leaves unchanged', () => {
  it('keeps the previous pending, evictions and open calls, and one empty list, frozen; JSON as if copied', () => {
    const states = replay(session);
    for (let k = 1; k < states.length; k++) {
      const [prev, cur] = [states[k - 1], states[k]];
      expect(cur.pending).toBe(prev.pending);
      expect(cur.evictions).toBe(prev.evictions);
      if (Object.keys(cur.open).length === 0 && Object.keys(prev.open).length === 0) expect(cur.open).toBe(prev.open);
    }
    const noWrites = states[states.length - 1].observations.filter((o) => o.writes.length === 0);
    expect(noWrites.length).toBeGreaterThan(1);
    for (const o of noWrites) {
      expect(o.writes).toBe(noWrites[0].writes);
      expect(isDeepFrozen(o.writes)).toBe(true);
    }
    // What a state copied through JSON gives, call by call: the same states.
    let fresh: LedgerState | undefined;
    for (const [k, req] of requestsOf(session).entries()) {
      fresh = JSON.parse(JSON.stringify(applyLedger(req, fresh, { now: 0 }).state)) as LedgerState;
      expect(JSON.stringify(states[k])).toBe(JSON.stringify(fresh));
    }
  });

  it('writes its own lists where a call changes them; the frozen previous state is untouched', () => {
    const reqs = requestsOf(session);
    // A pending invalidation, emptied by the next call.
    const before = freezeDeep(
      invalidate(applyLedger(reqs[1], undefined, { now: 0 }).state, 'file://src/app.py', 'git pull'),
    );
    const after = applyLedger(reqs[2], before, { now: 0 }).state;
    expect(before.pending).toHaveLength(1);
    expect(after.pending).toEqual([]);
    expect(after.tombstones.length).toBeGreaterThan(0);
    // An eviction added (a cost model that prefers it) where the previous state's list is the
    // frozen empty one it shares: pushing into that would throw.
    const evicting = replay(session, { eviction: DEFAULT_EVICTION_COST_MODEL });
    expect(evicting[evicting.length - 1].evictions).toHaveLength(1);
    expect(evicting[0].evictions).toHaveLength(0);
    // An open call left for the next one: its own record, the previous one unchanged.
    const states = replay(session);
    const open = applyLedger([...reqs[2], reqs[3][reqs[2].length]], states[2], { now: 0 }).state;
    expect(Object.keys(open.open)).toHaveLength(1);
    expect(Object.keys(states[2].open)).toHaveLength(0);
  });
});
