import { describe, expect, it } from 'vitest';
import { loadTokenizer } from '../../middleware/tokens/registry.ts';
import type { ChatMessage, ToolDef } from '../../middleware/types.ts';

const tools: ToolDef[] = [
  {
    type: 'function',
    function: {
      name: 'bash',
      description: 'Run a shell command',
      parameters: { type: 'object', properties: { cmd: { type: 'string' } }, required: ['cmd'] },
    },
  },
];
const conversation: ChatMessage[] = [
  { role: 'system', content: 'You are a careful coding agent.' },
  { role: 'user', content: 'List the files.' },
  {
    role: 'assistant',
    content: null,
    tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'bash', arguments: '{"cmd":"ls -la"}' } }],
  },
  { role: 'tool', tool_call_id: 'call_1', content: 'README.md\nsrc' },
  { role: 'assistant', content: 'There are two entries.' },
  { role: 'user', content: 'Thanks — now count them ✓.' },
];

const expected: Record<string, { markers: string[]; argsRendered?: string }> = {
  qwen3: {
    markers: [
      '<|im_start|>system\nYou are a careful coding agent.',
      '<tool_call>',
      '<tool_response>\nREADME.md',
      '"name": "bash"',
    ],
    argsRendered: '"arguments": {"cmd": "ls -la"}',
  },
  llama3_1: {
    markers: [
      '<|begin_of_text|><|start_header_id|>system<|end_header_id|>',
      '<|start_header_id|>tool<|end_header_id|>',
      '<|eot_id|>',
    ],
  },
  // vLLM turns null content into "", and DeepSeek-V3's shipped template renders tool calls only
  // when content is none, so (as on vLLM) the call itself is not rendered; the output is.
  deepseek_v3: {
    markers: [
      '<｜begin▁of▁sentence｜>You are a careful coding agent.',
      '<｜User｜>List the files.',
      '<｜tool▁output▁begin｜>README.md',
    ],
  },
  o200k_base: {
    markers: ['<|im_start|>system\nYou are a careful coding agent.', '# Tools', '<|im_start|>tool\nREADME.md'],
    argsRendered: '"arguments": {"cmd": "ls -la"}',
  },
  cl100k_base: {
    markers: ['<|im_start|>user\nList the files.<|im_end|>'],
    argsRendered: '"arguments": {"cmd": "ls -la"}',
  },
};

describe('tokenizer registry', () => {
  for (const spec of Object.keys(expected)) {
    it(`${spec}: renders a tool conversation and round-trips tokens`, async () => {
      const tok = await loadTokenizer(spec);
      expect(await loadTokenizer(spec)).toBe(tok);
      const text = tok.renderChat(conversation, { tools, addGenerationPrompt: true });
      for (const m of expected[spec].markers) expect(text).toContain(m);
      if (expected[spec].argsRendered) expect(text).toContain(expected[spec].argsRendered);
      const ids = tok.encode(text);
      expect(tok.decode(ids)).toBe(text);
      expect(tok.countTokens(text)).toBe(ids.length);
      expect(tok.encodeCached(text)).toEqual(ids);
      // Special-token strings in the text become single special ids, not pieces of text.
      const special = tok.specialTokens.find((s) => text.includes(s));
      expect(special).toBeDefined();
      expect(tok.encode(special!)).toHaveLength(1);
      // No BOS is added by encode: the template emits it where the model wants it.
      if (tok.bosToken) expect(tok.encode('hello').length).toBeLessThan(3);
    });
  }

  it('qwen3 renders system+user, tool turns and reasoning_content of the last assistant turn', async () => {
    const tok = await loadTokenizer('qwen3');
    expect(
      tok.renderChat([
        { role: 'system', content: 's' },
        { role: 'user', content: 'u' },
      ]),
    ).toBe('<|im_start|>system\ns<|im_end|>\n<|im_start|>user\nu<|im_end|>\n<|im_start|>assistant\n');
    const withReasoning: ChatMessage[] = [
      { role: 'user', content: 'q1' },
      { role: 'assistant', content: 'a1', reasoning_content: 'thinking one' },
      { role: 'user', content: 'q2' },
      { role: 'assistant', content: 'a2', reasoning_content: 'thinking two' },
    ];
    const text = tok.renderChat(withReasoning, { addGenerationPrompt: false });
    // Reasoning of turns before the last query is dropped by the template, the last one is kept.
    expect(text).not.toContain('thinking one');
    expect(text).toContain('<think>\nthinking two\n</think>\n\na2');
  });

  it('a chatTemplateFile overrides the shipped template, and unknown specs fail clearly', async () => {
    const { CHATML_TEMPLATE_FILE } = await import('../../middleware/tokens/registry.ts');
    const tok = await loadTokenizer('llama3_1', { chatTemplateFile: CHATML_TEMPLATE_FILE });
    expect(tok.renderChat([{ role: 'user', content: 'x' }])).toBe(
      '<|im_start|>user\nx<|im_end|>\n<|im_start|>assistant\n',
    );
    await expect(loadTokenizer('no-such-tokenizer')).rejects.toThrow(/unknown tokenizer/);
  });
});
