// Anthropic Messages through the gateway with the official @anthropic-ai/sdk over real sockets,
// against reference workers and the deployed pipeline: whole and streamed answers, tools, usage
// with cache reads, token counting, harness session ids, and errors in Anthropic's shape.
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KEY_A, MODEL, startIngressRig, type IngressRig } from '../helpers/ingress-rig.ts';

let rig: IngressRig;
beforeAll(async () => {
  rig = await startIngressRig();
});
afterAll(async () => rig?.close());

const SYSTEM = [
  {
    type: 'text' as const,
    text: 'You are a careful coding agent working in /repo.\n'.repeat(30),
    cache_control: { type: 'ephemeral' as const },
  },
];
const READ_FILE = {
  name: 'read_file',
  description: 'Read a file',
  input_schema: { type: 'object' as const, properties: { path: { type: 'string' } }, required: ['path'] },
};

describe('POST /v1/messages (Anthropic SDK)', () => {
  it('answers with a message: text block, stop_reason, uncached input + cache reads adding up to the prompt', async () => {
    const client = rig.anthropic();
    const first = await client.messages.create({
      model: MODEL,
      max_tokens: 24,
      system: SYSTEM,
      messages: [{ role: 'user', content: 'List the files in src/.' }],
    });
    expect(first.type).toBe('message');
    expect(first.role).toBe('assistant');
    expect(first.model).toBe(MODEL);
    expect(first.id).toMatch(/^msg_/);
    expect(first.content[0].type).toBe('text');
    expect((first.content[0] as Anthropic.TextBlock).text.length).toBeGreaterThan(0);
    // The reference worker stops at max_tokens when one is given.
    expect(first.stop_reason).toBe('max_tokens');
    expect(first.usage.output_tokens).toBe(24);
    expect(first.usage.input_tokens).toBeGreaterThan(100);
    expect(first.usage.cache_creation_input_tokens).toBe(0);

    const second = await client.messages.create({
      model: MODEL,
      max_tokens: 8,
      system: SYSTEM,
      messages: [
        { role: 'user', content: 'List the files in src/.' },
        { role: 'assistant', content: first.content as Anthropic.TextBlockParam[] },
        {
          role: 'user',
          content: [{ type: 'text', text: 'Now open the first one.', cache_control: { type: 'ephemeral' } }],
        },
      ],
    });
    // Same conversation, same worker (prefix-aware routing): the prefix is read from the cache.
    expect(second.usage.cache_read_input_tokens).toBeGreaterThan(100);
    expect(second.usage.input_tokens).toBeGreaterThan(0);
  });

  it('streams the full event sequence and the SDK assembles the same message', async () => {
    const stream = rig.anthropic().messages.stream({
      model: MODEL,
      max_tokens: 16,
      system: 'Be brief.',
      messages: [{ role: 'user', content: 'stream please' }],
    });
    const types: string[] = [];
    let text = '';
    stream.on('streamEvent', (ev) => {
      types.push(ev.type);
      if (ev.type === 'content_block_delta' && ev.delta.type === 'text_delta') text += ev.delta.text;
    });
    const msg = await stream.finalMessage();
    expect(types[0]).toBe('message_start');
    expect(types).toContain('content_block_start');
    expect(types).toContain('content_block_delta');
    expect(types).toContain('content_block_stop');
    expect(types.slice(-2)).toEqual(['message_delta', 'message_stop']);
    expect((msg.content[0] as Anthropic.TextBlock).text).toBe(text);
    expect(msg.stop_reason).toBe('max_tokens');
    expect(msg.usage.output_tokens).toBe(16);
    expect(msg.usage.input_tokens + (msg.usage.cache_read_input_tokens ?? 0)).toBeGreaterThan(5);
  });

  it('calls a tool (whole and streamed as input_json_delta) and takes its tool_result back', async () => {
    const client = rig.anthropic();
    const msg = await client.messages.create({
      model: MODEL,
      max_tokens: 64,
      tools: [READ_FILE],
      tool_choice: { type: 'tool', name: 'read_file' },
      messages: [{ role: 'user', content: 'Read README.md' }],
    });
    expect(msg.stop_reason).toBe('tool_use');
    const use = msg.content.find((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use')!;
    expect(use.name).toBe('read_file');
    expect(typeof (use.input as { path?: unknown }).path).toBe('string');

    const stream = client.messages.stream({
      model: MODEL,
      max_tokens: 64,
      tools: [READ_FILE],
      tool_choice: { type: 'any' },
      messages: [{ role: 'user', content: 'Read the config' }],
    });
    const deltas: string[] = [];
    stream.on('streamEvent', (ev) => {
      if (ev.type === 'content_block_delta' && ev.delta.type === 'input_json_delta') deltas.push(ev.delta.partial_json);
    });
    const streamed = await stream.finalMessage();
    const su = streamed.content.find((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use')!;
    expect(deltas.length).toBeGreaterThan(0);
    expect(su.input).toEqual(JSON.parse(deltas.join('')));

    const follow = await client.messages.create({
      model: MODEL,
      max_tokens: 8,
      tools: [READ_FILE],
      messages: [
        { role: 'user', content: 'Read README.md' },
        { role: 'assistant', content: [{ type: 'tool_use', id: use.id, name: use.name, input: use.input }] },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: use.id, content: '# ctxgate\nA gateway.' },
            { type: 'text', text: 'Summarise it.' },
          ],
        },
      ],
      tool_choice: { type: 'none' },
    });
    expect(follow.content[0].type).toBe('text');
  });

  it('leaves server tools out with a receipt instead of failing the call', async () => {
    const { data, response } = await rig
      .anthropic()
      .messages.create({
        model: MODEL,
        max_tokens: 4,
        tools: [{ type: 'web_search_20250305', name: 'web_search' }, READ_FILE],
        tool_choice: { type: 'none' },
        messages: [{ role: 'user', content: 'x' }],
      })
      .withResponse();
    expect(data.content[0].type).toBe('text');
    expect(response.headers.get('x-ctxgate-receipt')).toContain('ingress:tool_dropped');
  });

  it('counts tokens with the engine tokenizer', async () => {
    const client = rig.anthropic();
    const small = await client.messages.countTokens({ model: MODEL, messages: [{ role: 'user', content: 'hi' }] });
    const big = await client.messages.countTokens({
      model: MODEL,
      system: SYSTEM,
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(small.input_tokens).toBeGreaterThan(0);
    expect(big.input_tokens).toBeGreaterThan(small.input_tokens + 100);
  });

  it("keys the session by Claude Code's x-claude-code-session-id, and accepts bearer keys and anthropic-version", async () => {
    const res = await fetch(`${rig.url}/v1/messages`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: `Bearer ${KEY_A}`,
        'anthropic-version': '2023-06-01',
        'x-claude-code-session-id': 'cc-session-42',
      },
      body: JSON.stringify({ model: MODEL, max_tokens: 4, messages: [{ role: 'user', content: 'hello' }] }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-ctxgate-session')).toBe('cc-session-42');
    expect(((await res.json()) as { type: string }).type).toBe('message');
  });

  it('answers errors in the Anthropic shape with the right status', async () => {
    const client = rig.anthropic();
    type ApiError = InstanceType<typeof Anthropic.APIError>;
    const expectError = async (
      p: Promise<unknown>,
      cls: new (...a: never[]) => ApiError,
      status: number,
      type: string,
    ): Promise<void> => {
      const err = (await p.catch((e: unknown) => e)) as ApiError;
      expect(err).toBeInstanceOf(cls);
      expect(err.status).toBe(status);
      expect((err.error as { type: string; error: { type: string; message: string } }).type).toBe('error');
      expect((err.error as { error: { type: string } }).error.type).toBe(type);
    };
    await expectError(
      client.messages.create({ model: 'no-such-model', max_tokens: 4, messages: [{ role: 'user', content: 'x' }] }),
      Anthropic.NotFoundError,
      404,
      'not_found_error',
    );
    await expectError(
      client.messages.create({
        model: MODEL,
        messages: [{ role: 'user', content: 'x' }],
      } as unknown as Anthropic.MessageCreateParamsNonStreaming),
      Anthropic.BadRequestError,
      400,
      'invalid_request_error',
    );
    await expectError(
      client.messages.create({ model: MODEL, max_tokens: 4, messages: [{ role: 'tool' as 'user', content: 'x' }] }),
      Anthropic.BadRequestError,
      400,
      'invalid_request_error',
    );
    await expectError(
      rig
        .anthropic('sk-wrong')
        .messages.create({ model: MODEL, max_tokens: 4, messages: [{ role: 'user', content: 'x' }] }),
      Anthropic.AuthenticationError,
      401,
      'authentication_error',
    );
    await expectError(
      client.messages.countTokens({ model: 'nope', messages: [{ role: 'user', content: 'x' }] }),
      Anthropic.NotFoundError,
      404,
      'not_found_error',
    );
  });

  it('counts the requests under api="anthropic-messages"', async () => {
    const text = await (await fetch(`${rig.url}/metrics`)).text();
    expect(text).toMatch(
      /ctxgate_requests_total\{model="qwen3-32b",tenant="a",status="2xx",api="anthropic-messages"\} \d+/,
    );
    expect(text).toMatch(
      /ctxgate_requests_total\{model="unknown",tenant="a",status="4xx",api="anthropic-messages"\} \d+/,
    );
  });
});
