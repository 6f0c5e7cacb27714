// tool-shuffle: tool list order and JSON key order of the tool schemas vary per call, as when a
// framework builds tools from a dict/set or merges plugin registries per request. Seeded per
// session and call. O(tool schema size) per call.
import { hashString, mulberry32, shuffle, type Rng } from './rng.ts';
import { cloneJson, type Profile } from './types.ts';

export function shuffleKeys(v: unknown, rng: Rng): unknown {
  if (Array.isArray(v)) return v.map((x) => shuffleKeys(x, rng));
  if (typeof v !== 'object' || v === null) return v;
  const out: Record<string, unknown> = {};
  for (const k of shuffle(Object.keys(v), rng)) out[k] = shuffleKeys((v as Record<string, unknown>)[k], rng);
  return out;
}

export const toolShuffle: Profile = {
  name: 'tool-shuffle',
  describe:
    'tool list order and JSON key order of tool schemas change per call, seeded (frameworks that build tools from dicts/plugin registries)',
  apply(session, opts) {
    const calls = session.calls.map((c, i) => {
      if (!c.body.tools || c.body.tools.length === 0) return c;
      const rng = mulberry32(hashString(`${session.id}#${i}`, opts.seed));
      const body = cloneJson(c.body);
      body.tools = shuffle(body.tools ?? [], rng).map((t) => shuffleKeys(t, rng)) as typeof body.tools;
      return { ...c, body };
    });
    return { ...session, calls };
  },
};
