// ctxgate's own synthetic agent traffic (demo, tests, strategy bench): deterministic sessions
// of 20–60 calls with a realistic system prompt and tools, a task with explicit constraints,
// file reads, edits, test and type-checker logs (ANSI colours, progress bars), diffs and greps.
// A share of sessions carries a volatile clock or SWE-agent style elision, as real agents do.
import type { Session } from '../formats/types.ts';
import { applyProfile } from '../profiles/index.ts';
import { generateSession, type SessionShape } from './session.ts';

export const DEFAULT_SYNTH_SEED = 42;
export const DEFAULT_SESSION_SHAPE: SessionShape = {
  minCalls: 20,
  maxCalls: 60,
  minFunctions: 3,
  maxFunctions: 7,
  model: 'synth-agent',
};

export interface SynthOptions extends Partial<SessionShape> {
  count: number;
  seed?: number;
  /** Every Nth session (offset 1) gets a volatile clock; 0 = none. */
  volatileEvery?: number;
  /** Every Nth session (offset 2) gets last-n elision; 0 = none. */
  elisionEvery?: number;
}

export const DEFAULT_VOLATILE_EVERY = 4;
export const DEFAULT_ELISION_EVERY = 4;

export function generateSessions(o: SynthOptions): Session[] {
  const seed = o.seed ?? DEFAULT_SYNTH_SEED;
  const shape: SessionShape = {
    ...DEFAULT_SESSION_SHAPE,
    ...Object.fromEntries(Object.entries(o).filter(([k, v]) => k in DEFAULT_SESSION_SHAPE && v !== undefined)),
  };
  const volatileEvery = o.volatileEvery ?? DEFAULT_VOLATILE_EVERY;
  const elisionEvery = o.elisionEvery ?? DEFAULT_ELISION_EVERY;
  const out: Session[] = [];
  for (let i = 0; i < o.count; i++) {
    let s = generateSession(i, seed, shape);
    if (volatileEvery > 0 && i % volatileEvery === 1 % volatileEvery) {
      s = applyProfile([s], 'volatile-clock', { seed })[0];
      s.source += ':volatile-clock';
    } else if (elisionEvery > 0 && i % elisionEvery === 2 % elisionEvery) {
      s = applyProfile([s], 'last-n-elision', { seed })[0];
      s.source += ':last-n-elision';
    }
    out.push(s);
  }
  return out;
}

export type { SessionShape } from './session.ts';
