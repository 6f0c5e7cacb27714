// The incremental render window (tokens/incremental-render.ts; the slim windows of Qwen3 and
// DeepSeek-V3 in slim-window.ts, root + 4..8 messages for other templates), for every template the
// registry can load: every call's prompt, its text without the generation prompt and the memo's
// stable text must equal the jinja interpreter's whole render, on random conversations that reach
// every case a window depends on (reasoning in either form, several queries, tool responses sent as
// user turns, consecutive tool turns and tool outputs across the conversation, system turns mid-way
// and in runs, tool calls with null content, a trailing gateway note, enable_thinking), and the
// shortcut must still be on at the end (a mismatch found by the sampled full-render check would
// switch it off and hide behind full renders).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { segment } from '../../middleware/layout/segmentation.ts';
import { ChatRenderer } from '../../middleware/tokens/handle.ts';
import { renderPrompt, type RenderMemo } from '../../middleware/tokens/incremental-render.ts';
import { loadTokenizer } from '../../middleware/tokens/registry.ts';
import { slimRuleFor } from '../../middleware/tokens/slim-window.ts';
import { toolsKey } from '../../middleware/tokens/tools-key.ts';
import type { ChatMessage } from '../../middleware/types.ts';
import { bashTools } from '../helpers/bash-tool.ts';

const tools = bashTools;

const text = fc.constantFrom('ok', 'line one\nline two', '  padded  ', '', 'ünï <b>', 'a </think> b');
let callId = 0;
const message: fc.Arbitrary<ChatMessage[]> = fc.oneof(
  fc
    .record({
      c: text,
      r: fc.constantFrom(undefined, '', 'thinking', ' deep \n'),
      call: fc.constantFrom(false, true, 'null'),
    })
    .map(({ c, r, call }) => {
      const m: ChatMessage = { role: 'assistant', content: c };
      if (r !== undefined) m.reasoning_content = r;
      if (call === 'null') m.content = null;
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
  fc
    .integer({ min: 4, max: 6 })
    .map((k) => Array.from({ length: k }, (_, i) => ({ role: 'system', content: `run ${i}` }) as ChatMessage)),
);

// Every template the registry can load: the bundled ones, chatml (tiktoken) and the shipped
// DeepSeek template with tools (a chatTemplateFile override).
// [label, registry spec, chat template file, least share of calls rendered incrementally, whether it
// has a slim window (a shipped template edited without its rule's SHA-256 fails here)]. The
// share is lower where the template re-renders more: DeepSeek hoists every system turn (the
// gateway's trailing note too) to the prompt's head, so those calls render whole.
const TEMPLATES: [string, string, string | undefined, number, boolean][] = [
  ['qwen3', 'qwen3', undefined, 0.3, true],
  ['deepseek_v3', 'deepseek_v3', undefined, 0.15, true],
  ['deepseek-v3-tools.jinja', 'deepseek_v3', 'configs/templates/deepseek-v3-tools.jinja', 0.15, true],
  ['llama3_1', 'llama3_1', undefined, 0.3, false],
  ['chatml (o200k_base)', 'o200k_base', undefined, 0.3, false],
];

describe.each(TEMPLATES)('render window (%s)', (_label, spec, chatTemplateFile, minIncremental, slim) => {
  it('every call renders exactly as the interpreter renders the whole prompt', async () => {
    const tok = await loadTokenizer(spec, { chatTemplateFile });
    expect(slimRuleFor(tok) !== undefined).toBe(slim);
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
    console.log(`${_label}: ${incremental} of ${calls} calls incremental`);
    expect(incremental / calls).toBeGreaterThan(minIncremental);
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

// The generic window (root + 4..8 messages) of a template without a slim rule always holds a
// non-system turn: state a template carries over system turns (here: "right after a tool output",
// as DeepSeek's) must reach the new messages even after a run of system turns longer than the window.
describe('generic render window over a run of system turns', () => {
  it('keeps the state the last non-system turn left', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ctxgate-window-'));
    const file = join(dir, 'after-tool.jinja');
    writeFileSync(
      file,
      "{%- set ns = namespace(t=false) -%}{%- for m in messages -%}{%- if m['role'] == 'tool' -%}" +
        "{%- set ns.t = true -%}[T]{{ m['content'] }}{%- elif m['role'] == 'system' -%}[S]{{ m['content'] }}" +
        "{%- else -%}{%- if ns.t -%}[after-tool]{%- endif -%}{%- set ns.t = false -%}[{{ m['role'] }}]{{ m['content'] }}" +
        '{%- endif -%}{%- endfor -%}{%- if add_generation_prompt -%}[gen]{%- endif -%}',
    );
    const tok = await loadTokenizer('o200k_base', { chatTemplateFile: file });
    const interpreter = new ChatRenderer(tok.templateSource, undefined, tok.eosToken);
    const o = { tools: undefined, extra: undefined, contextKey: toolsKey(undefined, undefined).contextKey };
    const history: ChatMessage[] = [
      { role: 'user', content: 'q' },
      { role: 'tool', content: 'o' },
      ...Array.from({ length: 6 }, (_, i) => ({ role: 'system', content: `s${i}` }) as ChatMessage),
    ];
    const first = renderPrompt(tok, history, segment(history).messageHashes, 0, history.length, o, undefined);
    const more: ChatMessage[] = [...history, { role: 'assistant', content: 'a' }, { role: 'user', content: 'u' }];
    const next = renderPrompt(tok, more, segment(more).messageHashes, 0, more.length, o, first.memo);
    expect(next.text).toBe(interpreter.interpret(more, { addGenerationPrompt: true }));
    expect(next.text).toContain('[after-tool][assistant]a');
    expect(['incremental', 'verified']).toContain(next.mode);
    rmSync(dir, { recursive: true });
  });
});
