// OpenAI Responses through the gateway with the official `openai` SDK's Responses API over real
// sockets, against reference workers and the deployed pipeline: whole and streamed answers,
// function tools, previous_response_id chains stored per tenant, store: false, GET/DELETE, the
// Codex session header, reasoning items, and errors in the OpenAI shape.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KEY_A, KEY_B, MODEL, startIngressRig, type IngressRig } from '../helpers/ingress-rig.ts';

let rig: IngressRig;
beforeAll(async () => {
  rig = await startIngressRig();
});
afterAll(async () => rig?.close());

const INSTRUCTIONS = 'You are a careful coding agent working in /repo.\n'.repeat(30);
const SHELL = {
  type: 'function' as const,
  name: 'shell',
  description: 'Run a command',
  parameters: { type: 'object', properties: { cmd: { type: 'string' } }, required: ['cmd'] },
  strict: false,
};

describe('POST /v1/responses (openai SDK, Responses API)', () => {
  it('answers with a response object, usage with cached tokens, and continues by previous_response_id', async () => {
    const client = rig.openai();
    const first = await client.responses.create({
      model: MODEL,
      instructions: INSTRUCTIONS,
      input: 'List the files in src/.',
      max_output_tokens: 20,
    });
    expect(first.id).toMatch(/^resp_/);
    expect(first.object).toBe('response');
    expect(first.status).toBe('incomplete'); // the reference worker stops at max_output_tokens
    expect(first.incomplete_details?.reason).toBe('max_output_tokens');
    expect(first.output_text.length).toBeGreaterThan(0);
    expect(first.usage?.output_tokens).toBe(20);
    expect(first.usage?.input_tokens).toBeGreaterThan(100);
    expect(first.usage?.input_tokens_details.cached_tokens).toBe(0);

    const second = await client.responses.create({
      model: MODEL,
      instructions: INSTRUCTIONS,
      previous_response_id: first.id,
      input: 'Open the first one.',
      max_output_tokens: 8,
    });
    expect(second.previous_response_id).toBe(first.id);
    // The stored conversation is the same prefix: the worker reads it from its cache.
    expect(second.usage!.input_tokens_details.cached_tokens).toBeGreaterThan(100);
    expect(second.usage!.input_tokens).toBeGreaterThan(first.usage!.input_tokens);

    const got = await client.responses.retrieve(second.id);
    expect(got.id).toBe(second.id);
    expect(got.output_text).toBe(second.output_text);
    // Another tenant can neither read nor continue it.
    const other = rig.openai(KEY_B);
    await expect(other.responses.retrieve(second.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(
      other.responses.create({ model: MODEL, previous_response_id: second.id, input: 'x' }),
    ).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await client.responses.delete(second.id);
    await expect(client.responses.retrieve(second.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
  });

  it('does not store a response created with store: false', async () => {
    const client = rig.openai();
    const r = await client.responses.create({ model: MODEL, input: 'ephemeral', store: false, max_output_tokens: 4 });
    expect((r as unknown as { store: boolean }).store).toBe(false);
    await expect(client.responses.retrieve(r.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(
      client.responses.create({ model: MODEL, previous_response_id: r.id, input: 'x' }),
    ).rejects.toBeInstanceOf(OpenAI.NotFoundError);
  });

  it('streams the event sequence; the deltas make the completed text', async () => {
    const stream = await rig.openai().responses.create({
      model: MODEL,
      input: [{ role: 'user', content: 'stream please' }],
      max_output_tokens: 12,
      stream: true,
    });
    const types: string[] = [];
    let text = '';
    let done: OpenAI.Responses.Response | undefined;
    const seq: number[] = [];
    for await (const ev of stream) {
      types.push(ev.type);
      seq.push(ev.sequence_number);
      if (ev.type === 'response.output_text.delta') text += ev.delta;
      if (ev.type === 'response.incomplete' || ev.type === 'response.completed') done = ev.response;
    }
    expect(types.slice(0, 5)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
    ]);
    expect(types.slice(-4)).toEqual([
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.incomplete',
    ]);
    expect(seq).toEqual(seq.map((_, i) => i));
    const item = done!.output.find((o): o is OpenAI.Responses.ResponseOutputMessage => o.type === 'message')!;
    expect((item.content[0] as OpenAI.Responses.ResponseOutputText).text).toBe(text);
    expect(done!.usage!.output_tokens).toBe(12);
    // A streamed response is stored too.
    expect((await rig.openai().responses.retrieve(done!.id)).output_text).toBe(text);
  });

  it('calls a function (whole and streamed), then takes its function_call_output', async () => {
    const client = rig.openai();
    const r = await client.responses.create({
      model: MODEL,
      input: 'Run the tests',
      tools: [SHELL],
      tool_choice: { type: 'function', name: 'shell' },
    });
    const call = r.output.find((o): o is OpenAI.Responses.ResponseFunctionToolCall => o.type === 'function_call')!;
    expect(call.name).toBe('shell');
    expect(typeof JSON.parse(call.arguments).cmd).toBe('string');

    const stream = await client.responses.create({
      model: MODEL,
      input: 'Run the linter',
      tools: [SHELL],
      tool_choice: 'required',
      stream: true,
    });
    let args = '';
    let doneArgs = '';
    for await (const ev of stream) {
      if (ev.type === 'response.function_call_arguments.delta') args += ev.delta;
      if (ev.type === 'response.function_call_arguments.done') doneArgs = ev.arguments;
    }
    expect(args.length).toBeGreaterThan(0);
    expect(doneArgs).toBe(args);

    const follow = await client.responses.create({
      model: MODEL,
      previous_response_id: r.id,
      tools: [SHELL],
      tool_choice: 'none',
      input: [{ type: 'function_call_output', call_id: call.call_id, output: 'all 12 tests passed' }],
      max_output_tokens: 6,
    });
    expect(follow.output[0].type).toBe('message');
  });

  it('serves freeform (custom) tools as custom_tool_call items, whole and streamed, and leaves hosted tools out with a receipt', async () => {
    const client = rig.openai();
    const patch = { type: 'custom' as const, name: 'apply_patch', description: 'Apply a patch' };
    const { data: r, response } = await client.responses
      .create({
        model: MODEL,
        input: 'Fix the typo',
        tools: [patch, { type: 'web_search' }],
        tool_choice: { type: 'custom', name: 'apply_patch' },
      })
      .withResponse();
    expect(response.headers.get('x-ctxgate-receipt')).toContain('ingress:tool_dropped');
    const call = r.output.find((o): o is OpenAI.Responses.ResponseCustomToolCall => o.type === 'custom_tool_call')!;
    expect(call.name).toBe('apply_patch');
    expect(typeof call.input).toBe('string');
    expect(call.input.length).toBeGreaterThan(0);

    const stream = await client.responses.create({
      model: MODEL,
      input: 'Fix it again',
      tools: [patch],
      tool_choice: 'required',
      stream: true,
    });
    let input: string | undefined;
    let item: OpenAI.Responses.ResponseOutputItem | undefined;
    for await (const ev of stream) {
      if (ev.type === 'response.custom_tool_call_input.done') input = ev.input;
      if (ev.type === 'response.output_item.done') item = ev.item;
    }
    expect(item?.type).toBe('custom_tool_call');
    expect((item as OpenAI.Responses.ResponseCustomToolCall).input).toBe(input);

    const follow = await client.responses.create({
      model: MODEL,
      tools: [patch],
      tool_choice: 'none',
      input: [
        { role: 'user', content: 'Fix the typo' },
        { type: 'custom_tool_call', call_id: call.call_id, name: 'apply_patch', input: call.input },
        { type: 'custom_tool_call_output', call_id: call.call_id, output: 'Done!' },
      ],
      max_output_tokens: 4,
    });
    expect(follow.output[0].type).toBe('message');
  });

  it("keys the session by Codex's session_id header; drops encrypted-only reasoning with a receipt", async () => {
    const res = await fetch(`${rig.url}/v1/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY_A}`, session_id: 'codex-conv-7' },
      body: JSON.stringify({
        model: MODEL,
        store: false,
        max_output_tokens: 4,
        input: [
          { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'fix the bug' }] },
          { type: 'reasoning', id: 'rs_1', summary: [], encrypted_content: 'gAAAA...' },
          { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Looking at it.' }] },
          { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'go on' }] },
        ],
      }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-ctxgate-session')).toBe('codex-conv-7');
    expect(res.headers.get('x-ctxgate-receipt')).toContain('ingress:reasoning_dropped');
  });

  it('answers errors in the OpenAI shape with the right status', async () => {
    const client = rig.openai();
    const err = (await client.responses
      .create({ model: 'no-such-model', input: 'x' })
      .catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
    expect(err).toBeInstanceOf(OpenAI.NotFoundError);
    expect(err.code).toBe('model_not_found');
    const bad = (await client.responses
      .create({ model: MODEL, input: [{ type: 'item_reference', id: 'x' }] })
      .catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
    expect(bad).toBeInstanceOf(OpenAI.BadRequestError);
    expect(bad.param).toBe('input[0].type');
    const noInput = (await client.responses
      .create({ model: MODEL } as OpenAI.Responses.ResponseCreateParamsNonStreaming)
      .catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
    expect(noInput.status).toBe(400);
    expect(noInput.param).toBe('input');
    await expect(rig.openai('sk-wrong').responses.create({ model: MODEL, input: 'x' })).rejects.toBeInstanceOf(
      OpenAI.AuthenticationError,
    );
  });
  it('resends an unchanged history with a reasoning item between two calls of one turn: the same upstream prompt every time', async () => {
    // store: false, the whole history each call (a stateless client); the body memo hands out the
    // same item objects, so the adapter's kept translation is reused and must not grow.
    const client = rig.openai();
    const input = [
      { role: 'user' as const, content: `Read both files please. ${'Context line. '.repeat(100)}` },
      { type: 'function_call' as const, call_id: 'c1', name: 'shell', arguments: '{"cmd":"cat a.py"}' },
      { type: 'reasoning' as const, id: 'rs_1', summary: [{ type: 'summary_text' as const, text: 'Also b.py.' }] },
      { type: 'function_call' as const, call_id: 'c2', name: 'shell', arguments: '{"cmd":"cat b.py"}' },
      { type: 'function_call_output' as const, call_id: 'c1', output: 'def f(): pass' },
      { type: 'function_call_output' as const, call_id: 'c2', output: 'def g(): pass' },
      { role: 'user' as const, content: 'What do they do?' },
    ];
    const sizes: number[] = [];
    for (let k = 0; k < 4; k++) {
      const r = await client.responses.create({
        model: MODEL,
        input,
        tools: [SHELL],
        store: false,
        max_output_tokens: 4,
      });
      sizes.push(r.usage?.input_tokens ?? -1);
    }
    expect(sizes[0]).toBeGreaterThan(100);
    expect(sizes).toEqual([sizes[0], sizes[0], sizes[0], sizes[0]]);
  });
});
