// The native rendering of the bundled Qwen3 template must give the jinja interpreter's text for
// every conversation it accepts, and decline (undefined) wherever the interpreter throws. Generated
// conversations mix every role, reasoning in both places, <think> markers in content, tool-result
// user turns, tool calls with arguments of every JSON kind (and invalid JSON), odd whitespace,
// tools and template variables. Seeded: the same cases every run.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ChatRenderer } from '../../middleware/tokens/handle.ts';
import {
  CheckedNative,
  CROSS_CHECK_EVERY,
  CROSS_CHECK_FIRST,
  nativeRenderFor,
} from '../../middleware/tokens/native-render.ts';
import { renderQwen3 } from '../../middleware/tokens/qwen3-template.ts';
import { loadTokenizer } from '../../middleware/tokens/registry.ts';
import { toTemplateMessages, toTemplateTools } from '../../middleware/tokens/template-input.ts';
import type { ChatMessage, ToolDef } from '../../middleware/types.ts';

const piece = fc.constantFrom(
  'text',
  ' ',
  '\n',
  '\n\n',
  '\t',
  '\u00a0',
  '\u2028',
  '<think>',
  '</think>',
  '<tool_response>',
  '</tool_response>',
  '<|im_end|>',
  '{"a": 1}',
  'ünï ✓',
);
const text = fc.array(fc.oneof(piece, fc.string({ maxLength: 6 })), { maxLength: 8 }).map((xs) => xs.join(''));
const args = fc.oneof(
  fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.stringify(v)),
  fc.constantFrom('{', '', '"just a string"', '12', 'null', '{"cmd": "ls", "n": 1.5, "deep": {"x": [1, "y"]}}'),
  fc.jsonValue({ maxDepth: 1 }),
);
const toolCall = fc.record(
  {
    id: fc.string({ maxLength: 4 }),
    type: fc.constant('function'),
    function: fc.record(
      { name: fc.oneof(fc.constantFrom('bash', 'read_file'), fc.constant(7)), arguments: args },
      {
        requiredKeys: ['arguments'],
      },
    ),
  },
  { requiredKeys: ['function'] },
);
// Reasoning inlined in content, as agents resend it: [head]<think>…</think>[tail], whitespace around.
const ws = fc.constantFrom('', '\n', '\n\n', ' ', '\t\n');
const thinking = fc
  .tuple(text, fc.constantFrom('<think>', ''), ws, text, ws, text, ws)
  .map(([head, open, a, why, b, tail, c]) => `${head}${open}${a}${why}${b}</think>${a}${tail}${c}`);
const content = fc.oneof(
  text,
  thinking,
  fc.constant(null),
  fc.array(fc.record({ type: fc.constant('text'), text }), { maxLength: 3 }),
);
const message: fc.Arbitrary<ChatMessage> = fc.record(
  {
    role: fc.constantFrom('system', 'user', 'user', 'assistant', 'assistant', 'tool', 'tool', 'developer'),
    content,
    // Mostly absent, so that reasoning inlined in content is split out by the template.
    reasoning_content: fc.oneof(
      { arbitrary: fc.constant(undefined), weight: 20 },
      { arbitrary: text, weight: 10 },
      { arbitrary: fc.constant(null), weight: 3 },
      { arbitrary: fc.constant(5), weight: 1 },
    ),
    reasoning: fc.oneof({ arbitrary: fc.constant(undefined), weight: 5 }, text),
    tool_calls: fc.array(toolCall, { maxLength: 2 }),
    tool_call_id: fc.string({ maxLength: 4 }),
    name: fc.oneof({ arbitrary: fc.string({ maxLength: 4 }), weight: 6 }, fc.constant(3)),
  },
  { requiredKeys: ['role', 'content'] },
) as fc.Arbitrary<ChatMessage>;
const tool: fc.Arbitrary<ToolDef> = fc.record({
  type: fc.constant('function'),
  function: fc.record({
    name: fc.constantFrom('bash', 'read_file', 'ünï'),
    description: text,
    parameters: fc.jsonValue({ maxDepth: 2 }),
  }),
}) as fc.Arbitrary<ToolDef>;
const extra = fc.oneof(
  { arbitrary: fc.constant(undefined), weight: 8 },
  fc.record({ enable_thinking: fc.oneof(fc.boolean(), fc.constant('false'), fc.constant(0)) }),
  fc.constant({ enable_thinking: false, other: 1 }),
);

describe('native Qwen3 template rendering', async () => {
  const tok = await loadTokenizer('qwen3');
  const renderer = new ChatRenderer(tok.templateSource, tok.bosToken, tok.eosToken);

  it('is picked for the bundled template only', () => {
    expect(nativeRenderFor(tok.templateSource)).toBe(renderQwen3);
    expect(nativeRenderFor(`${tok.templateSource} `)).toBeUndefined();
  });

  it("equals the interpreter's text on generated conversations, and declines where it throws", () => {
    let rendered = 0;
    let runs = 0;
    fc.assert(
      fc.property(
        fc.array(message, { minLength: 1, maxLength: 9 }),
        fc.option(fc.array(tool, { maxLength: 3 }), { nil: undefined }),
        fc.boolean(),
        extra,
        (messages, tools, gen, ex) => {
          runs++;
          let ref: string | Error;
          try {
            ref = renderer.interpret(messages, { tools, addGenerationPrompt: gen, extra: ex });
          } catch (err) {
            ref = err as Error;
          }
          const native = renderQwen3(toTemplateMessages(messages, true), toTemplateTools(tools), gen, ex);
          if (ref instanceof Error) expect(native).toBeUndefined();
          else if (native !== undefined) {
            rendered++;
            expect(native).toBe(ref);
          }
        },
      ),
      { seed: 20261130, numRuns: 600 },
    );
    // The comparison means something only if most cases were rendered natively.
    expect(rendered).toBeGreaterThan(runs / 2);
  });

  it('renders agent sessions (tool loops, reasoning, a second query) natively and exactly', () => {
    const tools: ToolDef[] = [
      { type: 'function', function: { name: 'bash', parameters: { type: 'object', properties: {} } } },
    ];
    const messages: ChatMessage[] = [
      { role: 'system', content: 'You are a coding agent.' },
      { role: 'user', content: 'Fix the test.' },
    ];
    for (let i = 0; i < 12; i++) {
      messages.push({
        role: 'assistant',
        content: i % 3 === 0 ? `<think>\nplan ${i}\n</think>\n\nstep ${i}` : null,
        ...(i % 4 === 1 ? { reasoning_content: `why ${i}` } : {}),
        tool_calls: [{ id: `c${i}`, type: 'function', function: { name: 'bash', arguments: `{"cmd":"ls ${i}"}` } }],
      });
      messages.push({ role: 'tool', tool_call_id: `c${i}`, content: `out ${i}\n` });
      if (i === 6) messages.push({ role: 'user', content: 'Now the docs.' });
      for (const gen of [true, false])
        for (const t of [tools, undefined]) {
          const native = renderQwen3(toTemplateMessages(messages, true), t, gen, { enable_thinking: false });
          expect(native).toBe(
            renderer.interpret(messages, { tools: t, addGenerationPrompt: gen, extra: { enable_thinking: false } }),
          );
        }
    }
  });

  it('a tools array rendered again, changed in place in between, renders its new schemas', () => {
    const messages = toTemplateMessages([{ role: 'user', content: 'hi' }], true);
    const tools: ToolDef[] = [
      { type: 'function', function: { name: 'bash', parameters: { type: 'object', properties: {} } } },
    ];
    const ref = () => renderer.interpret([{ role: 'user', content: 'hi' }], { tools, addGenerationPrompt: true });
    expect(renderQwen3(messages, tools, true, undefined)).toBe(ref());
    // The same array again (remembered), then changed in place: a new tool, a renamed one.
    expect(renderQwen3(messages, tools, true, undefined)).toBe(ref());
    tools.push({ type: 'function', function: { name: 'read', description: 'ünï ✓ "q"' } });
    expect(renderQwen3(messages, tools, true, undefined)).toBe(ref());
    tools[0].function.name = 'sh';
    const renamed = renderQwen3(messages, tools, true, undefined);
    expect(renamed).toBe(ref());
    expect(renamed).toContain('"name": "sh"');
    // A schema tojson cannot write (a function value) is declined however often it is asked.
    const bad = [{ type: 'function', function: { name: 'f', parameters: { x: () => 1 } } }] as unknown as ToolDef[];
    expect(renderQwen3(messages, bad, true, undefined)).toBeUndefined();
    expect(renderQwen3(messages, bad, true, undefined)).toBeUndefined();
  });

  it('a renderer whose native text differs is switched off and the interpreter text returned', () => {
    let calls = 0;
    // A render the schedule cross-checks (past the first CROSS_CHECK_FIRST, a multiple of CROSS_CHECK_EVERY).
    const wrongAfter = 2 * CROSS_CHECK_EVERY;
    expect(wrongAfter).toBeGreaterThan(CROSS_CHECK_FIRST);
    const checked = new CheckedNative(() => (calls++ === wrongAfter ? 'wrong' : 'right'));
    const out: (string | undefined)[] = [];
    for (let i = 0; i <= wrongAfter + 3; i++) out.push(checked.render([], undefined, true, undefined, () => 'right'));
    // Up to the mismatch every text is right (the wrong one replaced by the interpreter's), then declined.
    expect(out.slice(0, wrongAfter + 1).every((x) => x === 'right')).toBe(true);
    expect(out.slice(wrongAfter + 1)).toEqual([undefined, undefined, undefined]);
    expect(checked.enabled).toBe(false);
  });
});
