// Bounded per-session ring of the last diagnostics, kept in the session state (its own part) so
// every replica (Redis store) sees the same history. O(ring) pointer copies per call: the stored
// ring is shared and frozen (session/shared-parts.ts), so a new one is written: frozen and sized
// from the old one's size (deep-freeze.ts frozenAppend), so the store's put visits only the new record.
import { frozenAppend } from '../deep-freeze.ts';
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
  const prev = readSlot(state, BREAKS_SLOT) ?? [];
  // Frozen and sized from the stored ring's size: the store's put then visits only the new record.
  const ring = frozenAppend(prev, Math.max(0, prev.length + 1 - size), [rec]) as BreakRecord[];
  writeSlot(state, BREAKS_SLOT, ring);
}

/**
 * The record of a call: the diagnostics' own keys in their order, then the call's. Written key by
 * key: `{ ...prefix, call, ... }` costs ~1 µs per key the spread source lacks on Node 20 (each
 * builds a new hidden class), ~4-7 µs a call here.
 */
export function breakRecord(
  prefix: PrefixDiagnostics,
  call: number,
  at: number,
  requestId: string,
  messages: number,
): BreakRecord {
  const rec: Record<string, unknown> = {};
  for (const k of Object.keys(prefix)) rec[k] = prefix[k as keyof PrefixDiagnostics];
  rec.call = call;
  rec.at = at;
  rec.request_id = requestId;
  rec.messages = messages;
  return rec as unknown as BreakRecord;
}

export function readBreaks(state: SessionState | undefined): BreakRecord[] {
  return (state && readSlot(state, BREAKS_SLOT)) ?? [];
}
