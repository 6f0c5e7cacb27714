// Per-stage session state. Each stage (and the pipeline's own diagnostics) keeps its part of a
// session's state under its own key of `SessionState.stages`, tagged with the version of that
// part's shape. A part written with another version is not read: that stage starts fresh while
// the rest of the session carries on. These two accessors are the only place where the stored
// JSON meets a stage's type; stages never cast. O(1) per access.
import type { SessionState } from './store.ts';

/** One stage's part of the session state: its key and the version of its shape. */
export interface StateSlot<T> {
  readonly key: string;
  readonly version: number;
  /** Phantom field: ties the slot to its type. */
  readonly type?: T;
}

export function defineSlot<T>(key: string, version: number): StateSlot<T> {
  return { key, version };
}

/** The stage's part, or undefined when absent or written with another version (start fresh). */
export function readSlot<T>(state: SessionState, slot: StateSlot<T>): T | undefined {
  const e = state.stages?.[slot.key];
  // The one JSON boundary: only this slot's writer, at this version, put this value here.
  return e && e.v === slot.version ? (e.s as T) : undefined;
}

export function writeSlot<T>(state: SessionState, slot: StateSlot<T>, value: T): void {
  const stages = (state.stages ??= {});
  // The same value at the same version (a slot rewritten unchanged each call, such as the fork
  // lead): the entry already there stays, frozen and sized, so the store's put has no new entry
  // to walk and freeze. Same JSON either way.
  const cur = stages[slot.key];
  if (cur !== undefined && cur.v === slot.version && cur.s === value) return;
  stages[slot.key] = { v: slot.version, s: value };
}

export function clearSlot<T>(state: SessionState, slot: StateSlot<T>): void {
  if (state.stages) delete state.stages[slot.key];
}
