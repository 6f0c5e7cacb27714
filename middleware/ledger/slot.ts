// Reading and writing the ledger's part of a session state. Read: whichever shape it was stored
// with, v2 as is, v1 (calls as a record keyed by id) turned into v2 (call-log.ts fromV1Calls) so
// that a session stored before the upgrade keeps its observations, tombstones and evictions, and
// so its exact prompt. Write: v2 by default; v1 when the gateway is told to (config
// `session_state.ledger_write_version: 1`) so that replicas of a release that reads only v1 keep
// reading what new replicas write during a rolling upgrade with a shared store. O(1) for v2,
// O(calls) per read and per write of a v1 part (what v1 cost before v2).
import { readSlot, writeSlot } from '../session/stage-state.ts';
import type { SessionState } from '../session/store.ts';
import { callsRecord, fromV1Calls } from './call-log.ts';
import { LEDGER_SLOT, LEDGER_SLOT_V1, type LedgerState, type LedgerStateV1 } from './types.ts';

/** The ledger part versions this release can write (it reads both). */
export type LedgerWriteVersion = 1 | 2;

/** Written unless the config says otherwise: the chunked shape (v2). */
export const DEFAULT_LEDGER_WRITE_VERSION: LedgerWriteVersion = 2;

/** The ledger's part as v2, or undefined when absent (or stored with an unknown version). */
export function readLedger(state: SessionState): LedgerState | undefined {
  const v2 = readSlot(state, LEDGER_SLOT);
  if (v2) return v2;
  const v1 = readSlot(state, LEDGER_SLOT_V1);
  return v1 ? ledgerFromV1(v1) : undefined;
}

/** Stores `part` in `state` with the shape of `version` (the slot holds one version at a time). */
export function writeLedger(state: SessionState, part: LedgerState, version: LedgerWriteVersion): void {
  if (version === 1) writeSlot(state, LEDGER_SLOT_V1, ledgerToV1(part));
  else writeSlot(state, LEDGER_SLOT, part);
}

/** A v1 part as v2: every field shared but `v` and `calls`. */
export function ledgerFromV1(p: LedgerStateV1): LedgerState {
  return { ...p, v: 2, calls: fromV1Calls(p.calls) };
}

/** A v2 part as v1, the shape a release that reads only v1 wrote: every field shared but `v` and
 * `calls` (a record keyed by id, in the chunks' order, as v1 set its keys). */
export function ledgerToV1(p: LedgerState): LedgerStateV1 {
  return { ...p, v: 1, calls: callsRecord(p.calls) };
}
