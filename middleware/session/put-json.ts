// One JSON.stringify per put across stacked stores: the quota decorator sizes a state by its JSON
// and the memory store keeps that JSON, so the first hands the string to the second. Keyed by the
// state object and taken (deleted) by the consumer within the same put, so a state mutated and put
// again is serialised afresh. States carrying a checksum are not shared (the memory store drops it).
import type { SessionState } from './store.ts';

const pending = new WeakMap<SessionState, string>();

/** JSON.stringify(state), remembered for a store further down this put. */
export function putJson(state: SessionState): string {
  const json = JSON.stringify(state);
  if (state.checksum === undefined) pending.set(state, json);
  return json;
}

/** The JSON a store above serialised for this put, once; undefined when none did. */
export function takePutJson(state: SessionState): string | undefined {
  const json = pending.get(state);
  if (json !== undefined) pending.delete(state);
  return json;
}
