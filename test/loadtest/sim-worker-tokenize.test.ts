// The per-piece memoised path must give exactly the ids of encoding the whole rendered prompt.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadWorkerTokenizer, TOKENIZER_SPECS, type ChatMessage } from '../../loadtest/sim-worker/tokenize.ts';

const tools = [
  {
    type: 'function',
    function: {
      name: 'bash',
      description: 'Run a command',
      parameters: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] },
    },
  },
];
const messages: ChatMessage[] = [
  { role: 'system', content: 'You are a coding agent.\n\n' },
  { role: 'user', content: 'Fix the bug in  parser.py\n\n\nthen run the tests. 12345 ünïcode 日本語 🚀' },
  {
    role: 'assistant',
    content: 'Looking.\n',
    tool_calls: [
      { id: 'call_1', type: 'function', function: { name: 'bash', arguments: '{"command": "cat parser.py"}' } },
    ],
  },
  { role: 'tool', tool_call_id: 'call_1', content: 'def parse(x):\n    return x  \n\n' },
  { role: 'assistant', content: '  Done.  ' },
  { role: 'user', content: '<|im_start|> literal specials <｜User｜> in text\n' },
];

describe('sim-worker tokenizer', () => {
  for (const spec of TOKENIZER_SPECS) {
    it(`${spec}: cached per-piece ids equal whole-prompt encoding`, async () => {
      const tok = await loadWorkerTokenizer(spec);
      for (const n of [2, 4, 6]) {
        const text = tok.renderChat(messages.slice(0, n), { tools });
        const whole = tok.encode(text);
        expect(whole.length).toBeGreaterThan(10);
        expect(tok.encodeCached(text)).toEqual(whole);
        expect(tok.encodeCached(text)).toEqual(whole); // second pass: served from the memo
      }
    });
  }

  it('deepseek tools template renders tool definitions and tool calls with content', async () => {
    const tok = await loadWorkerTokenizer(
      'deepseek_v3',
      resolve(import.meta.dirname, '../../configs/templates/deepseek-v3-tools.jinja'),
    );
    const text = tok.renderChat(messages.slice(0, 4), { tools });
    expect(text).toContain('## Tools\nYou have access to the following tools:\n\n### bash\nDescription: Run a command');
    expect(text).toContain(
      'Looking.\n<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>bash<｜tool▁sep｜>{"command": "cat parser.py"}<｜tool▁call▁end｜><｜tool▁calls▁end｜><｜end▁of▁sentence｜>',
    );
    expect(text.endsWith('<｜tool▁output▁end｜>')).toBe(true);
    const bundled = await loadWorkerTokenizer('deepseek_v3');
    const fewer = bundled.encode(bundled.renderChat(messages.slice(0, 4), { tools })).length;
    expect(tok.encode(text).length).toBeGreaterThan(fewer);
    expect(
      readFileSync(resolve(import.meta.dirname, '../../configs/templates/deepseek-v3-tools.jinja'), 'utf8'),
    ).toContain('<｜tool▁output▁begin｜>');
  });
});
