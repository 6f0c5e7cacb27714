// Bounded per-session ring of the last diagnostics, kept in the session state (its own part) so
// every replica (Redis store) sees the same history. O(1) amortised per call.
import type { PrefixDiagnostics } from '../types.ts';
import { defineSlot, readSlot, writeSlot } from '../session/stage-state.ts';
import type { SessionState } from '../session/store.ts';

export const BREAK_RING_SIZE = 100;

export interface BreakRecord extends PrefixDiagnostics {
  call: number;
  at: number;
  request_id: string;
  messages: number;
}

export const BREAKS_SLOT = defineSlot<BreakRecord[]>('breaks', 1);

export function pushBreak(state: SessionState, rec: BreakRecord, size: number = BREAK_RING_SIZE): void {
  const ring = readSlot(state, BREAKS_SLOT) ?? [];
  ring.push(rec);
  if (ring.length > size) ring.splice(0, ring.length - size);
  writeSlot(state, BREAKS_SLOT, ring);
}

export function readBreaks(state: SessionState | undefined): BreakRecord[] {
  return (state && readSlot(state, BREAKS_SLOT)) ?? [];
}
