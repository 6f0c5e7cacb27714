// Data tier: the input readers over every recorded run in $CTXGATE_TRAJECTORIES, not just the excerpts.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readSessions } from '../../loadtest/formats/read-sessions.ts';
import { dataTrajectories } from '../fixtures/trajectories.ts';

describe('recorded runs, read in place', () => {
  it('mini-swe-agent: every run has the bash tool, recorded usage on every call, and an append-only history', async () => {
    const sessions = await readSessions([join(dataTrajectories(), 'mini-swe-agent-deepseek')]);
    expect(sessions.length).toBeGreaterThanOrEqual(20);
    for (const s of sessions) {
      expect(s.calls.length).toBeGreaterThan(10);
      expect(s.calls[0].body.tools?.[0].function.name).toBe('bash');
      expect(s.calls.filter((c) => c.recordedUsage)).toHaveLength(s.calls.length);
      for (let i = 1; i < s.calls.length; i++) {
        const prev = s.calls[i - 1].body.messages;
        expect(s.calls[i].body.messages.slice(0, prev.length)).toEqual(prev);
      }
    }
  });

  it('aider history: 33 calls, each opening with the system prompt', async () => {
    const [s] = await readSessions([join(dataTrajectories(), 'aider')]);
    expect(s.calls).toHaveLength(33);
    for (const c of s.calls) {
      expect(c.body.messages[0].role).toBe('system');
      expect(c.body.messages[c.body.messages.length - 1].role).toBe('user');
    }
  });

  it('SWE-agent: every .traj parses, and every tool message answers a tool call of an earlier assistant turn', async () => {
    const sessions = await readSessions([join(dataTrajectories(), 'swe-agent')]);
    expect(sessions.length).toBeGreaterThanOrEqual(20);
    for (const s of sessions) {
      const last = s.calls[s.calls.length - 1].body.messages;
      const asked = new Set<string>();
      for (const m of last) {
        for (const c of m.tool_calls ?? []) asked.add(c.id);
        if (m.role === 'tool') expect(asked.has(m.tool_call_id ?? '')).toBe(true);
      }
    }
  });
});
