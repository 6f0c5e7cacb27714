// Data tier: the lossless checker over EVERY call of every recorded run in $CTXGATE_TRAJECTORIES,
// under every agent profile, with and without a budget M* = 8,192, through the pipeline as
// `ctxgate serve` assembles it (bench lossless: no sockets, no workers). Nothing the agent sent is
// missing or altered, and no session's first call changed. One test per profile (both budgets).
// Every call of every run costs ~25 CPU-minutes on 2 cores, too long for CI: by default each
// session is cut to its first CTXGATE_LOSSLESS_MAX_CALLS calls (20); 0 runs every call, as
// `ctxgate bench lossless /path/to/trajectories` does.
import { describe, expect, it } from 'vitest';
import { losslessRun } from '../../loadtest/bench-lossless.ts';
import { readSessions } from '../../loadtest/formats/read-sessions.ts';
import type { Session } from '../../loadtest/formats/types.ts';
import { applyProfile, PROFILE_NAMES } from '../../loadtest/profiles/index.ts';
import { chatTemplateFor } from '../../loadtest/replay/chat-template.ts';
import { dataTrajectories } from '../fixtures/trajectories.ts';

const TOKENIZER = 'deepseek_v3';
const DEFAULT_MAX_CALLS = 20;
const MAX_CALLS = Number(process.env.CTXGATE_LOSSLESS_MAX_CALLS ?? DEFAULT_MAX_CALLS);
const cut = (s: Session): Session => (MAX_CALLS > 0 ? { ...s, calls: s.calls.slice(0, MAX_CALLS) } : s);

describe('lossless on all the recorded data', () => {
  let sessions: Session[] | undefined;
  const all = async (): Promise<Session[]> => (sessions ??= (await readSessions([dataTrajectories()])).map(cut));

  for (const profile of PROFILE_NAMES) {
    it(`${profile}: 0 missing, 0 altered, 0 first calls changed, without and with M* = 8192`, async () => {
      const profiled = applyProfile(await all(), profile, { seed: 1 });
      const calls = profiled.reduce((n, s) => n + s.calls.length, 0);
      expect(calls).toBeGreaterThan(MAX_CALLS > 0 ? 40 * Math.min(MAX_CALLS, 5) : 2000);
      for (const budget of [0, 8192]) {
        const r = await losslessRun(profiled, profile, budget, {
          tokenizer: TOKENIZER,
          chatTemplate: chatTemplateFor(TOKENIZER, undefined),
        });
        expect(r.calls).toBe(calls);
        expect(
          { missing: r.missing, altered: r.altered, first_call_changed: r.first_call_changed, samples: r.samples },
          `${profile} M*=${budget}`,
        ).toEqual({ missing: 0, altered: 0, first_call_changed: 0, samples: [] });
      }
    });
  }
});
