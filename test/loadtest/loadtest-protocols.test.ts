import { describe, expect, it } from 'vitest';
import type { ChatRequest } from '../../middleware/types.ts';
import { buildRequest, parseAnswer } from '../../loadtest/load/protocols.ts';
import { SessionPlayer, SessionQueue } from '../../loadtest/load/traffic.ts';
import type { Session } from '../../loadtest/formats/types.ts';

const body: ChatRequest = {
  model: 'm',
  messages: [
    { role: 'system', content: 'sys' },
    { role: 'user', content: 'task' },
    {
      role: 'assistant',
      content: 'look',
      tool_calls: [{ id: 'c1', type: 'function', function: { name: 'read', arguments: '{"path":"a.py"}' } }],
    },
    { role: 'tool', tool_call_id: 'c1', content: 'print(1)' },
  ],
  tools: [
    {
      type: 'function',
      function: {
        name: 'read',
        description: 'read a file',
        parameters: { type: 'object', properties: { path: { type: 'string' } } },
      },
    },
  ],
};
const opts = { model: 'served', stream: false, maxTokens: 64, key: 'k', sessionId: 's1' };

describe('loadtest request bodies', () => {
  it('chat: model, cap and stream options set; key as bearer', () => {
    const r = buildRequest('chat', { ...body, stream_options: { include_usage: false } }, { ...opts, stream: true });
    const b = JSON.parse(String(r.body));
    expect(r.path).toBe('/v1/chat/completions');
    expect(r.headers.authorization).toBe('Bearer k');
    expect(b).toMatchObject({ model: 'served', max_tokens: 64, stream: true, stream_options: { include_usage: true } });
    expect(b.messages).toEqual(body.messages);
  });

  it('anthropic: system lifted, tool calls as tool_use, results as user tool_result, x-api-key', () => {
    const r = buildRequest('anthropic', body, opts);
    const b = JSON.parse(String(r.body));
    expect(r.path).toBe('/v1/messages');
    expect(r.headers['x-api-key']).toBe('k');
    expect(r.headers.authorization).toBeUndefined();
    expect(b.system).toBe('sys');
    expect(b.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'task' }] },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'look' },
          { type: 'tool_use', id: 'c1', name: 'read', input: { path: 'a.py' } },
        ],
      },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'c1', content: 'print(1)' }] },
    ]);
    expect(b.tools[0]).toEqual({
      name: 'read',
      description: 'read a file',
      input_schema: body.tools![0].function.parameters,
    });
  });

  it('responses: instructions, function_call items, store off, session as prompt_cache_key', () => {
    const b = JSON.parse(String(buildRequest('responses', body, opts).body));
    expect(b.instructions).toBe('sys');
    expect(b.store).toBe(false);
    expect(b.prompt_cache_key).toBe('s1');
    expect(b.input.map((i: { type: string }) => i.type)).toEqual([
      'message',
      'message',
      'function_call',
      'function_call_output',
    ]);
    expect(b.input[3]).toEqual({ type: 'function_call_output', call_id: 'c1', output: 'print(1)' });
  });
});

describe('loadtest answers', () => {
  it('chat JSON and SSE give the same answer and usage', () => {
    const json = parseAnswer(
      'chat',
      false,
      JSON.stringify({
        choices: [{ message: { content: 'hi there' }, finish_reason: 'stop' }],
        usage: { prompt_tokens: 100, completion_tokens: 2, prompt_tokens_details: { cached_tokens: 64 } },
      }),
    );
    const frames = [
      { choices: [{ delta: { role: 'assistant', content: '' } }] },
      { choices: [{ delta: { content: 'hi' } }] },
      { choices: [{ delta: { content: ' there' }, finish_reason: 'stop' }] },
      {
        choices: [],
        usage: { prompt_tokens: 100, completion_tokens: 2, prompt_tokens_details: { cached_tokens: 64 } },
      },
    ];
    const sse = parseAnswer(
      'chat',
      true,
      `${frames.map((f) => `data: ${JSON.stringify(f)}\n\n`).join('')}data: [DONE]\n\n`,
    );
    for (const p of [json, sse]) {
      expect(p.answer).toEqual({ content: 'hi there' });
      expect(p.usage).toEqual({ prompt: 100, cached: 64, completion: 2 });
      expect(p.finish).toBe('stop');
    }
  });

  it('chat SSE tool-call deltas are joined per index', () => {
    const frames = [
      { choices: [{ delta: { tool_calls: [{ index: 0, id: 'x', function: { name: 'read', arguments: '' } }] } }] },
      { choices: [{ delta: { tool_calls: [{ index: 0, function: { arguments: '{"path":' } }] } }] },
      {
        choices: [
          { delta: { tool_calls: [{ index: 0, function: { arguments: '"b"}' } }] }, finish_reason: 'tool_calls' },
        ],
      },
    ];
    const p = parseAnswer('chat', true, frames.map((f) => `data: ${JSON.stringify(f)}\n\n`).join(''));
    expect(p.answer).toEqual({
      content: null,
      tool_calls: [{ id: 'x', type: 'function', function: { name: 'read', arguments: '{"path":"b"}' } }],
    });
  });

  it('anthropic: prompt = input + cache read + cache creation, cached = cache read, stream and JSON alike', () => {
    const usage = { input_tokens: 10, cache_read_input_tokens: 80, cache_creation_input_tokens: 5, output_tokens: 7 };
    const json = parseAnswer(
      'anthropic',
      false,
      JSON.stringify({
        type: 'message',
        content: [
          { type: 'text', text: 'ok' },
          { type: 'tool_use', id: 't1', name: 'read', input: { path: 'a' } },
        ],
        stop_reason: 'tool_use',
        usage,
      }),
    );
    const events = [
      ['message_start', { type: 'message_start', message: { usage: { ...usage, output_tokens: 1 } } }],
      ['content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }],
      ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'ok' } }],
      [
        'content_block_start',
        {
          type: 'content_block_start',
          index: 1,
          content_block: { type: 'tool_use', id: 't1', name: 'read', input: {} },
        },
      ],
      [
        'content_block_delta',
        { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '{"path":"a"}' } },
      ],
      ['message_delta', { type: 'message_delta', delta: { stop_reason: 'tool_use' }, usage: { output_tokens: 7 } }],
      ['message_stop', { type: 'message_stop' }],
    ] as const;
    const sse = parseAnswer(
      'anthropic',
      true,
      events.map(([e, d]) => `event: ${e}\ndata: ${JSON.stringify(d)}\n\n`).join(''),
    );
    for (const p of [json, sse]) {
      expect(p.usage).toEqual({ prompt: 95, cached: 80, completion: 7 });
      expect(p.answer?.content).toBe('ok');
      expect(p.answer?.tool_calls?.[0].function).toEqual({ name: 'read', arguments: '{"path":"a"}' });
      expect(p.finish).toBe('tool_use');
    }
    expect(
      parseAnswer(
        'anthropic',
        false,
        JSON.stringify({ type: 'error', error: { type: 'overloaded_error', message: 'busy' } }),
      ).error,
    ).toBe('busy');
  });

  it('responses: output items and cached tokens from input_tokens_details; the stream reads response.completed', () => {
    const resp = {
      id: 'resp_1',
      status: 'completed',
      output: [
        { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'done' }] },
        { type: 'function_call', call_id: 'fc1', name: 'read', arguments: '{}' },
      ],
      usage: { input_tokens: 50, output_tokens: 3, input_tokens_details: { cached_tokens: 32 } },
    };
    const json = parseAnswer('responses', false, JSON.stringify(resp));
    const sse = parseAnswer(
      'responses',
      true,
      `event: response.created\ndata: ${JSON.stringify({ type: 'response.created', response: { ...resp, output: [], status: 'in_progress' } })}\n\nevent: response.completed\ndata: ${JSON.stringify({ type: 'response.completed', response: resp })}\n\n`,
    );
    for (const p of [json, sse]) {
      expect(p.usage).toEqual({ prompt: 50, cached: 32, completion: 3 });
      expect(p.answer).toEqual({
        content: 'done',
        tool_calls: [{ id: 'fc1', type: 'function', function: { name: 'read', arguments: '{}' } }],
      });
    }
  });

  it('a body that is not JSON is an error, not a crash', () => {
    expect(parseAnswer('chat', false, '<html>bad gateway</html>').error).toMatch(/not JSON/);
  });
});

describe('session players', () => {
  const toolSession: Session = {
    id: 's',
    source: 'test',
    calls: [
      { body: { model: 'm', messages: body.messages.slice(0, 2) } },
      { body: { model: 'm', messages: body.messages } },
      {
        body: {
          model: 'm',
          messages: [...body.messages, { role: 'assistant', content: 'done' }, { role: 'user', content: 'thanks' }],
        },
      },
    ],
  };

  it('puts each received answer where the recorded one was, remapping tool-call ids', () => {
    const p = new SessionPlayer(toolSession, 0);
    expect(p.body().messages).toEqual(body.messages.slice(0, 2));
    p.advance({
      content: 'live',
      tool_calls: [{ id: 'live1', type: 'function', function: { name: 'read', arguments: '{"path":"z.py"}' } }],
    });
    const m1 = p.body().messages;
    expect(m1[2]).toEqual({
      role: 'assistant',
      content: 'live',
      tool_calls: [{ id: 'live1', type: 'function', function: { name: 'read', arguments: '{"path":"z.py"}' } }],
    });
    expect(m1[3]).toMatchObject({ role: 'tool', tool_call_id: 'live1', content: 'print(1)' });
    p.advance({ content: 'final words' });
    const m2 = p.body().messages;
    expect(m2[2].content).toBe('live');
    expect(m2[4]).toEqual({ role: 'assistant', content: 'final words' });
    p.advance(undefined);
    expect(p.done()).toBe(true);
  });

  it('keeps the recorded tool calls when the answer has another count, so the next body stays valid', () => {
    const p = new SessionPlayer(toolSession, 0);
    p.advance({ content: 'just text' });
    const m = p.body().messages;
    expect(m[2]).toEqual({ role: 'assistant', content: 'just text', tool_calls: body.messages[2].tool_calls });
    expect(m[3].tool_call_id).toBe('c1');
  });

  it('a second play of a session is a new conversation (tagged first user message), the system prompt is shared', () => {
    const q = new SessionQueue([toolSession]);
    const a = q.take();
    const b = q.take();
    expect(b.id).toBe('s#1');
    expect(a.body().messages[0]).toEqual(b.body().messages[0]);
    expect(b.body().messages[1].content).toBe('[loadtest play 1]\ntask');
    expect(q.taken).toBe(2);
  });
});
