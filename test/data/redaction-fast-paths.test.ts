// Data tier: redact.ts's fast paths (shared gates, `env_secret` searched from its operators) give the
// plain scan's answers, match for match, on every distinct message text of every recorded run in
// $CTXGATE_TRAJECTORIES (tool outputs, commands, thoughts, file bodies of real agents).
import { describe, expect, it } from 'vitest';
import { readSessions } from '../../loadtest/formats/read-sessions.ts';
import { dataTrajectories } from '../fixtures/trajectories.ts';
import { sameAsPlain } from '../middleware/helpers/plain-redact.ts';

describe('redaction fast paths on all the recorded data', () => {
  it('equal the plain scan on every distinct message text', async () => {
    const texts = new Set<string>();
    for (const s of await readSessions([dataTrajectories()]))
      for (const c of s.calls)
        for (const m of c.body.messages)
          texts.add(typeof m.content === 'string' ? m.content : JSON.stringify(m.content));
    expect(texts.size).toBeGreaterThan(1000);
    let env = 0;
    for (const t of texts) if (sameAsPlain(t)) env++;
    expect(env).toBeGreaterThan(0);
  });
});
