// append-only: the recording as it was (mini-swe-agent, Claude-Code-style loops).
import type { Profile } from './types.ts';

export const appendOnly: Profile = {
  name: 'append-only',
  describe:
    'history sent exactly as recorded; every call extends the previous one (mini-swe-agent, aider within a mode)',
  apply: (session) => session,
};
