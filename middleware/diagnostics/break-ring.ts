// Bounded per-session ring of the last diagnostics, kept in the session state's layout part so
// every replica (Redis store) sees the same history. O(1) amortised per call.
import type { PrefixDiagnostics } from '../types.ts';
import type { SessionState } from '../session/store.ts';

export const BREAK_RING_SIZE = 100;

export interface BreakRecord extends PrefixDiagnostics {
  call: number;
  at: number;
  request_id: string;
  messages: number;
}

export function pushBreak(state: SessionState, rec: BreakRecord, size: number = BREAK_RING_SIZE): void {
  const layout = (state.layout ??= {});
  const ring = Array.isArray(layout.breaks) ? (layout.breaks as BreakRecord[]) : [];
  ring.push(rec);
  if (ring.length > size) ring.splice(0, ring.length - size);
  layout.breaks = ring;
}

export function readBreaks(state: SessionState | undefined): BreakRecord[] {
  const ring = state?.layout?.breaks;
  return Array.isArray(ring) ? (ring as BreakRecord[]) : [];
}
