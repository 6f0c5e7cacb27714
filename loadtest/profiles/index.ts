// Profile registry: name → behaviour, plus the text `bench replay --help` shows.
import type { Session } from '../formats/types.ts';
import { appendOnly } from './append-only.ts';
import { condense } from './condense.ts';
import { lastNElision } from './last-n-elision.ts';
import { novelElision } from './novel-elision.ts';
import { toolShuffle } from './tool-shuffle.ts';
import type { Profile, ProfileOptions } from './types.ts';
import { volatileClock } from './volatile-clock.ts';

export type { Profile, ProfileOptions } from './types.ts';

export const PROFILES: Record<string, Profile> = {
  [appendOnly.name]: appendOnly,
  [volatileClock.name]: volatileClock,
  [lastNElision.name]: lastNElision,
  [novelElision.name]: novelElision,
  [toolShuffle.name]: toolShuffle,
  [condense.name]: condense,
};

export const PROFILE_NAMES = Object.keys(PROFILES);

export function profileHelp(indent = '  '): string {
  return PROFILE_NAMES.map((n) => `${indent}${n.padEnd(15)} ${PROFILES[n].describe}`).join('\n');
}

export function applyProfile(sessions: Session[], name: string, opts: ProfileOptions): Session[] {
  const p = PROFILES[name];
  if (!p) throw new Error(`unknown profile '${name}' (known: ${PROFILE_NAMES.join(', ')})`);
  return sessions.map((s) => p.apply(s, opts));
}
