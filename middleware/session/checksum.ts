// Checksums of session states: sha256 over the canonical JSON of the state without its
// checksum field. Written on put, verified on get by every store.
import { canonicalHash } from '../canonical-json.ts';
import type { SessionState } from './store.ts';

export function stateChecksum(state: SessionState): string {
  const { checksum: _c, ...rest } = state;
  void _c;
  return canonicalHash(rest);
}

export function withChecksum(state: SessionState): SessionState {
  return { ...state, checksum: stateChecksum(state) };
}

export function checksumValid(state: SessionState): boolean {
  return typeof state.checksum === 'string' && state.checksum === stateChecksum(state);
}
