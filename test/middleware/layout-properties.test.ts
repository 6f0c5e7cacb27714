import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createPipeline } from '../../middleware/pipeline.ts';
import { MemorySessionStore } from '../../middleware/session/memory-store.ts';
import type { ChatMessage, ChatRequest, PipelineContext } from '../../middleware/types.ts';

const line = fc.oneof(
  fc.constantFrom(
    'Current date: 2026-11-30T03:10:00Z',
    'request id 3f2a9c11',
    'Turn 12',
    'Be concise.',
    'Use the tools.',
    '',
    'session 0b8e2c5d-1f7a-4c1e-9a3b-2d4e6f8a0b1c',
  ),
  fc.string({ maxLength: 30 }),
);
const sysText = fc.array(line, { minLength: 1, maxLength: 6 }).map((ls) => ls.join('\n'));
const args = fc.dictionary(
  fc.constantFrom('a', 'b', 'cmd', 'path'),
  fc.oneof(fc.string({ maxLength: 8 }), fc.integer()),
  { maxKeys: 3 },
);

const request = fc
  .tuple(
    sysText,
    fc.array(fc.tuple(fc.string({ maxLength: 40 }), args, fc.string({ maxLength: 40 })), { maxLength: 4 }),
    fc.string({ maxLength: 40 }),
  )
  .map(([sys, steps, last]): ChatRequest => {
    const messages: ChatMessage[] = [
      { role: 'system', content: sys },
      { role: 'user', content: 'task: ' + last },
    ];
    steps.forEach(([thought, a, out], i) => {
      messages.push({
        role: 'assistant',
        content: thought,
        tool_calls: [{ id: `c${i}`, type: 'function', function: { name: 'bash', arguments: JSON.stringify(a) } }],
      });
      messages.push({ role: 'tool', tool_call_id: `c${i}`, content: out });
    });
    return {
      model: 'm',
      messages,
      tools: [
        {
          type: 'function',
          function: { name: 'bash', parameters: { type: 'object', properties: { cmd: { type: 'string' } } } },
        },
      ],
    };
  });

const ctx: PipelineContext = { tenant: 't', requestId: 'r', headers: {}, model: 'm' };
const strings = (v: unknown, out: string[] = []): string[] => {
  if (typeof v === 'string') out.push(v);
  else if (Array.isArray(v)) v.forEach((x) => strings(x, out));
  else if (v && typeof v === 'object') Object.values(v).forEach((x) => strings(x, out));
  return out;
};

describe('layout invariants (property tests)', () => {
  it('keeps every line the agent sent, pairs tool calls, and is deterministic and idempotent', async () => {
    await fc.assert(
      fc.asyncProperty(request, async (req) => {
        const frozen = JSON.stringify(req);
        const a = await createPipeline({
          model: 'm',
          tokenizer: 'cl100k_base',
          store: new MemorySessionStore(),
        }).process(req, ctx);
        expect(JSON.stringify(req)).toBe(frozen); // the caller's object is never mutated
        const b = await createPipeline({
          model: 'm',
          tokenizer: 'cl100k_base',
          store: new MemorySessionStore(),
        }).process(req, ctx);
        expect(JSON.stringify(a.body)).toBe(JSON.stringify(b.body));
        const again = await createPipeline({
          model: 'm',
          tokenizer: 'cl100k_base',
          store: new MemorySessionStore(),
        }).process(a.body, ctx);
        // Rewriting the rewrite leaves everything before the leaf note as it was.
        expect(JSON.stringify(again.body.messages.slice(0, a.body.messages.length - 1))).toBe(
          JSON.stringify(a.body.messages.slice(0, a.body.messages.length - 1)),
        );
        const sent = JSON.stringify(a.body);
        const original = JSON.parse(frozen) as ChatRequest;
        for (const m of original.messages)
          for (const l of strings(m.content).flatMap((s) => s.split('\n')))
            expect(sent).toContain(JSON.stringify(l).slice(1, -1));
        // Arguments may be re-serialised to the first-seen key order (with a receipt), never changed.
        const argsOf = (r: ChatRequest) =>
          r.messages.flatMap((m) => m.tool_calls ?? []).map((tc) => JSON.parse(tc.function.arguments));
        expect(argsOf(a.body)).toEqual(argsOf(original));
        const ids = new Set<string>();
        for (const m of a.body.messages) {
          if (m.role === 'assistant') m.tool_calls?.forEach((tc) => ids.add(tc.id));
          if (m.role === 'tool') expect(ids.has(m.tool_call_id!)).toBe(true);
          expect(['system', 'user', 'assistant', 'tool']).toContain(m.role);
        }
      }),
      { numRuns: 60 },
    );
  });

  it('on append-only traffic the rewrite is byte-stable call to call', async () => {
    await fc.assert(
      fc.asyncProperty(request, async (req) => {
        const p = createPipeline({ model: 'm', tokenizer: 'o200k_base', store: new MemorySessionStore() });
        const c = { ...ctx, headers: { 'x-session-id': 's' } };
        const n = req.messages.length;
        const first = await p.process({ ...req, messages: req.messages.slice(0, Math.max(2, n - 2)) }, c);
        const second = await p.process(req, c);
        const stable = (r: typeof first, k: number) => JSON.stringify(r.body.messages.slice(0, k));
        const k = Math.max(2, n - 2) - 1; // up to the previous call's last agent message
        expect(stable(second, k)).toBe(stable(first, k));
        expect(JSON.stringify(second.body.tools)).toBe(JSON.stringify(first.body.tools));
      }),
      { numRuns: 40 },
    );
  });
});
