// volatile-clock: a `Current date: <ISO>` line at the top of the system prompt, advancing each
// call, as many frameworks template it. Breaks the prefix at token ~0 on every call for a
// gateway that does not move it. O(messages) per call.
import type { ChatMessage } from '../../middleware/types.ts';
import { hashString, mulberry32 } from './rng.ts';
import { cloneJson, type Profile } from './types.ts';

export const DEFAULT_CLOCK_START = '2025-06-02T09:00:00.000Z';
export const DEFAULT_CLOCK_STEP_SECONDS = 20;

export function clockLine(iso: string): string {
  return `Current date: ${iso}`;
}

function withClock(messages: ChatMessage[], line: string): ChatMessage[] {
  const out = messages.slice();
  const i = out.findIndex((m) => m.role === 'system' || m.role === 'developer');
  if (i < 0) return [{ role: 'system', content: line }, ...out];
  const m = out[i];
  const content =
    typeof m.content === 'string' ? `${line}\n${m.content}` : [{ type: 'text', text: line }, ...(m.content ?? [])];
  out[i] = { ...m, content };
  return out;
}

export const volatileClock: Profile = {
  name: 'volatile-clock',
  describe:
    'a "Current date: <ISO time>" line at the top of the system prompt, advancing every call (LangChain/CrewAI/OpenHands-style templates)',
  apply(session, opts) {
    const rng = mulberry32(hashString(session.id, opts.seed));
    const step = (opts.clockStepSeconds ?? DEFAULT_CLOCK_STEP_SECONDS) * 1000;
    let t = Date.parse(opts.clockStart ?? DEFAULT_CLOCK_START);
    const calls = session.calls.map((c) => {
      // jitter so calls are not on a fixed grid, but always strictly later
      t += Math.round(step * (0.5 + rng()));
      const body = cloneJson(c.body);
      body.messages = withClock(body.messages, clockLine(new Date(t).toISOString()));
      return { ...c, body };
    });
    return { ...session, calls };
  },
};
