// A profile rewrites the calls of an append-only recording the way a given agent framework
// would have sent them. Pure: sessions in, new sessions out, deterministic for a seed.
import type { Session } from '../formats/types.ts';

export interface ProfileOptions {
  seed: number;
  /** last-n-elision: tool outputs kept verbatim (SWE-agent LastNObservations n). */
  lastN?: number;
  /** condense: history length (messages) that triggers a condensation (OpenHands max_size). */
  condenseMaxMessages?: number;
  /** condense: leading messages never condensed (OpenHands keep_first). */
  condenseKeepFirst?: number;
  /** volatile-clock: start time of the first call (ISO) and seconds per call. */
  clockStart?: string;
  clockStepSeconds?: number;
}

export interface Profile {
  name: string;
  /** Which real agent does this, shown in --help. */
  describe: string;
  apply(session: Session, opts: ProfileOptions): Session;
}

export function cloneJson<T>(v: T): T {
  return structuredClone(v);
}
