// Reading the ledger's part of a session state, whichever shape it was stored with: v2 as is, v1
// (calls as a record keyed by id) turned into v2 (call-log.ts fromV1Calls) so that a session stored
// before the upgrade keeps its observations, tombstones and evictions, and so its exact prompt.
// The part is written back as v2 by the next call. O(1) for v2, O(calls) once for a v1 part.
import { readSlot } from '../session/stage-state.ts';
import type { SessionState } from '../session/store.ts';
import { fromV1Calls } from './call-log.ts';
import { LEDGER_SLOT, LEDGER_SLOT_V1, type LedgerState, type LedgerStateV1 } from './types.ts';

/** The ledger's part as v2, or undefined when absent (or stored with an unknown version). */
export function readLedger(state: SessionState): LedgerState | undefined {
  const v2 = readSlot(state, LEDGER_SLOT);
  if (v2) return v2;
  const v1 = readSlot(state, LEDGER_SLOT_V1);
  return v1 ? ledgerFromV1(v1) : undefined;
}

/** A v1 part as v2: every field shared but `v` and `calls`. */
export function ledgerFromV1(p: LedgerStateV1): LedgerState {
  return { ...p, v: 2, calls: fromV1Calls(p.calls) };
}
