// Qwen3's slim render window (tokens/incremental-render.ts: the previous message, after a stand-in
// query, instead of root + 4..8 messages): every call's prompt, its text without the generation
// prompt and the memo's stable text must equal the jinja interpreter's whole render, on random
// conversations that reach every case the window depends on (reasoning in either form, several
// queries, tool responses sent as user turns, consecutive tool turns, system turns mid-way, a
// trailing gateway note, enable_thinking), and the shortcut must still be on at the end (a mismatch
// found by the sampled full-render check would switch it off and hide behind full renders).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { segment } from '../../middleware/layout/segmentation.ts';
import { ChatRenderer } from '../../middleware/tokens/handle.ts';
import { renderPrompt, type RenderMemo } from '../../middleware/tokens/incremental-render.ts';
import { loadTokenizer } from '../../middleware/tokens/registry.ts';
import { toolsKey } from '../../middleware/tokens/tools-key.ts';
import type { ChatMessage, ToolDef } from '../../middleware/types.ts';

const tools: ToolDef[] = [
  {
    type: 'function',
    function: {
      name: 'bash',
      description: 'run',
      parameters: { type: 'object', properties: { cmd: { type: 'string' } }, required: ['cmd'] },
    },
  },
];

const text = fc.constantFrom('ok', 'line one\nline two', '  padded  ', '', 'ünï <b>', 'a </think> b');
let callId = 0;
const message: fc.Arbitrary<ChatMessage[]> = fc.oneof(
  fc
    .record({ c: text, r: fc.constantFrom(undefined, '', 'thinking', ' deep \n'), call: fc.boolean() })
    .map(({ c, r, call }) => {
      const m: ChatMessage = { role: 'assistant', content: c };
      if (r !== undefined) m.reasoning_content = r;
      if (call)
        m.tool_calls = [
          { id: `c${++callId}`, type: 'function', function: { name: 'bash', arguments: '{"cmd":"ls"}' } },
        ];
      return [m];
    }),
  text.map((c) => [{ role: 'assistant', content: `<think>\nplan ${c}\n</think>\n\nanswer ${c}` } as ChatMessage]),
  fc
    .integer({ min: 1, max: 2 })
    .chain((k) =>
      fc
        .array(text, { minLength: k, maxLength: k })
        .map((cs) => cs.map((c) => ({ role: 'tool', tool_call_id: 'c', content: `out ${c}` }) as ChatMessage)),
    ),
  text.map((c) => [{ role: 'user', content: `next task ${c}` } as ChatMessage]),
  text.map((c) => [{ role: 'user', content: `<tool_response>\n${c}\n</tool_response>` } as ChatMessage]),
  text.map((c) => [{ role: 'user', content: [{ type: 'text', text: `parts ${c}` }] } as ChatMessage]),
  text.map((c) => [{ role: 'system', content: `mid-way system ${c}` } as ChatMessage]),
);

describe('slim render window (qwen3)', () => {
  it('every call renders exactly as the interpreter renders the whole prompt', async () => {
    const tok = await loadTokenizer('qwen3');
    const interpreter = new ChatRenderer(tok.templateSource, tok.bosToken, tok.eosToken);
    let incremental = 0;
    let calls = 0;
    fc.assert(
      fc.property(
        fc.boolean(),
        fc.boolean(),
        fc.constantFrom(undefined, { enable_thinking: false }, { enable_thinking: true }),
        fc.array(fc.tuple(fc.array(message, { minLength: 1, maxLength: 3 }), fc.boolean()), {
          minLength: 2,
          maxLength: 14,
        }),
        (withTools, withSystem, extra, steps) => {
          const t = withTools ? tools : undefined;
          const key = toolsKey(t, extra);
          const opts = { tools: t, extra, contextKey: key.contextKey, toolsJson: key.json };
          const history: ChatMessage[] = [
            ...(withSystem ? [{ role: 'system', content: 'You are an agent.' } as ChatMessage] : []),
            { role: 'user', content: 'Fix the test.' },
          ];
          const rootEnd = withSystem ? 1 : 0;
          let memo: RenderMemo | undefined;
          for (const [added, note] of steps) {
            for (const ms of added) history.push(...ms);
            const messages = note
              ? [...history, { role: 'system', content: 'gateway note' } as ChatMessage]
              : [...history];
            const stableEnd = history.length;
            const hashes = segment(messages).messageHashes;
            const r = renderPrompt(tok, messages, hashes, rootEnd, stableEnd, opts, memo);
            const ro = { tools: t, extra };
            expect(r.text).toBe(interpreter.interpret(messages, { ...ro, addGenerationPrompt: true }));
            expect(r.textNoGen).toBe(interpreter.interpret(messages, { ...ro, addGenerationPrompt: false }));
            expect(r.memo.textNoGen).toBe(interpreter.interpret(history, { ...ro, addGenerationPrompt: false }));
            expect(r.sliceFrom(Math.max(0, r.text.length - 40))).toBe(r.text.slice(Math.max(0, r.text.length - 40)));
            calls++;
            if (r.mode === 'incremental') incremental++;
            memo = r.memo;
          }
        },
      ),
      { numRuns: 200, seed: 28 },
    );
    // The shortcut was used for most calls, and is still on (no sampled check found a difference).
    expect(incremental / calls).toBeGreaterThan(0.3);
    const m: ChatMessage[] = [
      { role: 'user', content: 'q' },
      { role: 'assistant', content: 'a' },
      { role: 'tool', content: 'o' },
    ];
    const o = { tools: undefined, extra: undefined, contextKey: toolsKey(undefined, undefined).contextKey };
    const first = renderPrompt(tok, m.slice(0, 3), segment(m).messageHashes, 0, 3, o, undefined);
    const more: ChatMessage[] = [...m, { role: 'assistant', content: 'b' }, { role: 'tool', content: 'p' }];
    const next = renderPrompt(tok, more, segment(more).messageHashes, 0, 5, o, first.memo);
    expect(['incremental', 'verified']).toContain(next.mode);
  });
});
