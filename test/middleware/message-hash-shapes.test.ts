// messageHash writes the canonical JSON of the common message shape directly; every shape (the
// common one, parts content, numbers, odd or malformed calls) must hash exactly as the canonical
// writer hashes the object the hash is defined over.
import { describe, expect, it } from 'vitest';
import { canonicalHash } from '../../middleware/canonical-json.ts';
import { messageHash } from '../../middleware/ledger/message-text.ts';
import type { ChatMessage } from '../../middleware/types.ts';
import { mulberry32 } from '../../loadtest/profiles/rng.ts';

/** The definition: canonical JSON of these fields (what messageHash hashed before its fast path). */
function reference(m: ChatMessage): string {
  return canonicalHash({
    role: m.role,
    content: m.content ?? null,
    tool_calls:
      m.tool_calls?.map((t) => ({ id: t.id, name: t.function?.name, arguments: t.function?.arguments })) ?? null,
    tool_call_id: m.tool_call_id ?? null,
    reasoning_content: m.reasoning_content ?? null,
    name: m.name ?? null,
  });
}

const STRINGS = [
  '',
  'a',
  'line\nnext\ttab',
  'quote " and \\ backslash',
  '\u0000\u001f ctl',
  'é ü 中文 😀',
  '\ud800 lone',
  '__proto__',
];

function pick<T>(rng: () => number, xs: readonly T[]): T {
  return xs[Math.floor(rng() * xs.length)];
}

/** A value for a field: mostly strings, sometimes absent, null or another type. */
function field(rng: () => number): unknown {
  const r = rng();
  if (r < 0.55) return pick(rng, STRINGS) + (rng() < 0.5 ? String(Math.floor(rng() * 1000)) : '');
  if (r < 0.75) return undefined;
  if (r < 0.85) return null;
  if (r < 0.9) return 42;
  if (r < 0.95) return true;
  return { nested: 'x' };
}

function call(rng: () => number): unknown {
  const r = rng();
  if (r < 0.03) return null;
  if (r < 0.06) return 7;
  const fn =
    rng() < 0.05
      ? rng() < 0.5
        ? null
        : 'str'
      : rng() < 0.05
        ? undefined
        : { name: field(rng), arguments: field(rng) };
  return { id: field(rng), type: 'function', function: fn };
}

function message(rng: () => number): ChatMessage {
  const m: Record<string, unknown> = {};
  const role = rng() < 0.95 ? pick(rng, ['system', 'user', 'assistant', 'tool']) : field(rng);
  if (role !== undefined) m.role = role;
  const c = rng();
  m.content =
    c < 0.6
      ? field(rng)
      : c < 0.8
        ? [
            { type: 'text', text: pick(rng, STRINGS) },
            { type: 'image_url', image_url: { url: 'data:x' } },
          ]
        : undefined;
  for (const k of ['name', 'tool_call_id', 'reasoning_content']) {
    const v = field(rng);
    if (v !== undefined || rng() < 0.3) m[k] = v;
  }
  const t = rng();
  if (t < 0.5) m.tool_calls = Array.from({ length: Math.floor(rng() * 3) }, () => call(rng));
  else if (t < 0.55) m.tool_calls = null;
  else if (t < 0.57) m.tool_calls = { not: 'an array' };
  return m as unknown as ChatMessage;
}

function outcome(f: () => string): string {
  try {
    return f();
  } catch (err) {
    return `throws ${(err as Error).constructor.name}`;
  }
}

describe('messageHash', () => {
  it('hashes every message shape as the canonical writer does (2,000 seeded messages)', () => {
    const rng = mulberry32(1717);
    let plain = 0;
    for (let i = 0; i < 2000; i++) {
      const m = message(rng);
      const want = outcome(() => reference(m));
      // a fresh object each time: messageHash is memoised per object
      expect(
        outcome(() => messageHash({ ...m })),
        JSON.stringify(m),
      ).toBe(want);
      if (typeof m.content === 'string' && typeof m.role === 'string') plain++;
    }
    expect(plain).toBeGreaterThan(200);
  });

  it('hashes an agent turn with tool calls and a tool output as before', () => {
    const turn = {
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'read_file', arguments: '{"path":"a.py"}' } }],
    } as ChatMessage;
    const out = { role: 'tool', tool_call_id: 'call_1', content: '   1\tprint("hi")\n' } as ChatMessage;
    for (const m of [turn, out]) expect(messageHash({ ...m })).toBe(reference(m));
  });
});
