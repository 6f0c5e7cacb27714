// Translation properties of the protocol adapters (fast-check):
//  - stream ≡ whole: any chunking of an upstream answer, streamed through the Anthropic or
//    Responses translator and reassembled from the events, equals the whole answer's translation;
//  - requests keep every text verbatim, in order, and every tool call paired with its result.
import { createHmac } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AnthropicStream, toAnthropicMessage } from '../../gateway/ingress/anthropic-answer.ts';
import { parseAnthropic } from '../../gateway/ingress/anthropic-request.ts';
import { ResponsesStream, toResponseObject } from '../../gateway/ingress/responses-answer.ts';
import { parseResponses, type ResponsesState } from '../../gateway/ingress/responses-request.ts';
import { MemoryResponseStore } from '../../gateway/ingress/responses-store.ts';
import type { AnswerContext } from '../../gateway/ingress/types.ts';
import { extractUsage } from '../../gateway/accounting/record/extract.ts';
import { flattenContent } from '../../middleware/tokens/template-input.ts';
import type { ChatMessage } from '../../middleware/types.ts';

/** The signing MAC the gateway passes (tenancy secret, thinking-signature label). */
const mac = (data: string): string => createHmac('sha256', 'test-signing-key').update(data).digest('base64url');

type Obj = Record<string, unknown>;
interface Answer {
  reasoning: string;
  content: string;
  calls: { name: string; args: Obj }[];
  finish: 'stop' | 'length' | 'tool_calls';
  usage: { prompt_tokens: number; completion_tokens: number; prompt_tokens_details: { cached_tokens: number } };
}

const text = fc.string({ unit: 'grapheme', maxLength: 40 });
const answerArb: fc.Arbitrary<Answer> = fc
  .record({
    reasoning: text,
    content: text,
    calls: fc.array(
      fc.record({
        name: fc.constantFrom('read', 'write', 'shell'),
        args: fc.dictionary(fc.string({ minLength: 1, maxLength: 5 }), fc.jsonValue({ maxDepth: 2 })),
      }),
      { maxLength: 3 },
    ),
    finish: fc.constantFrom('stop' as const, 'length' as const),
    prompt: fc.nat(5000),
    cached: fc.nat(5000),
    out: fc.nat(500),
  })
  .map((a) => ({
    reasoning: a.reasoning,
    content: a.content,
    calls: a.calls.map((c) => ({ name: c.name, args: JSON.parse(JSON.stringify(c.args)) as Obj })),
    finish: a.calls.length ? 'tool_calls' : a.finish,
    usage: {
      prompt_tokens: a.prompt,
      completion_tokens: a.out,
      prompt_tokens_details: { cached_tokens: Math.min(a.cached, a.prompt) },
    },
  }));

/** Splits s into pieces at the given fractions (any chunking an engine might produce). */
function split(s: string, cuts: number[]): string[] {
  const chars = [...s];
  const at = [...new Set(cuts.map((c) => Math.floor(c * chars.length)))]
    .filter((i) => i > 0 && i < chars.length)
    .sort((a, b) => a - b);
  const out: string[] = [];
  let prev = 0;
  for (const i of [...at, chars.length]) {
    out.push(chars.slice(prev, i).join(''));
    prev = i;
  }
  return out.filter(Boolean);
}

function whole(a: Answer): Obj {
  const message: Obj = { role: 'assistant', content: a.content || null };
  if (a.reasoning) message.reasoning_content = a.reasoning;
  if (a.calls.length)
    message.tool_calls = a.calls.map((c, i) => ({
      id: `call_${i}`,
      type: 'function',
      function: { name: c.name, arguments: JSON.stringify(c.args) },
    }));
  return {
    id: 'c',
    object: 'chat.completion',
    choices: [{ index: 0, message, finish_reason: a.finish }],
    usage: a.usage,
  };
}

function chunks(a: Answer, cuts: number[]): Obj[] {
  const ch = (delta: Obj, finish: string | null = null): Obj => ({
    id: 'c',
    object: 'chat.completion.chunk',
    choices: [{ index: 0, delta, finish_reason: finish }],
  });
  const out: Obj[] = [ch({ role: 'assistant', content: '' })];
  for (const p of split(a.reasoning, cuts)) out.push(ch({ reasoning_content: p }));
  for (const p of split(a.content, cuts)) out.push(ch({ content: p }));
  a.calls.forEach((c, i) => {
    const args = JSON.stringify(c.args);
    out.push(
      ch({ tool_calls: [{ index: i, id: `call_${i}`, type: 'function', function: { name: c.name, arguments: '' } }] }),
    );
    for (const p of split(args, cuts)) out.push(ch({ tool_calls: [{ index: i, function: { arguments: p } }] }));
  });
  out.push(ch({}, a.finish));
  out.push({ id: 'c', object: 'chat.completion.chunk', choices: [], usage: a.usage });
  return out;
}

function events(sse: string): { event: string; data: Obj }[] {
  return sse
    .split('\n\n')
    .filter(Boolean)
    .map((f) => {
      const lines = f.split('\n');
      return { event: lines[0].slice('event: '.length), data: JSON.parse(lines[1].slice('data: '.length)) as Obj };
    });
}

const ctx = (state: unknown): AnswerContext => ({
  requestId: 'r',
  tenant: 't',
  promptTokens: 1,
  state,
  readUsage: extractUsage,
  mac,
});
const cutsArb = fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 6 });

describe('Anthropic translation', () => {
  it('stream ≡ whole: reassembled events equal the whole answer (content, stop_reason, usage)', () => {
    fc.assert(
      fc.property(answerArb, cutsArb, (a, cuts) => {
        const t = new AnthropicStream(ctx({ model: 'm' }));
        let sse = '';
        for (const c of chunks(a, cuts)) sse += t.chunk(c);
        sse += t.done();
        const evs = events(sse);
        expect(evs[0].event).toBe('message_start');
        expect(evs.at(-1)!.event).toBe('message_stop');
        const blocks: Obj[] = [];
        const json: string[] = [];
        let delta: Obj = {};
        for (const { event, data } of evs) {
          expect(data.type).toBe(event);
          if (event === 'content_block_start') {
            expect(data.index).toBe(blocks.length);
            blocks.push({ ...(data.content_block as Obj) });
            json.push('');
          } else if (event === 'content_block_delta') {
            const d = data.delta as Obj;
            const b = blocks[data.index as number];
            if (d.type === 'text_delta') b.text = (b.text as string) + (d.text as string);
            if (d.type === 'thinking_delta') b.thinking = (b.thinking as string) + (d.thinking as string);
            if (d.type === 'signature_delta') b.signature = d.signature;
            if (d.type === 'input_json_delta') json[data.index as number] += d.partial_json as string;
          } else if (event === 'message_delta') delta = data;
        }
        blocks.forEach((b, i) => {
          if (b.type === 'tool_use') b.input = json[i] ? JSON.parse(json[i]) : {};
        });
        const w = toAnthropicMessage(whole(a), extractUsage(whole(a)), ctx({ model: 'm' }));
        expect(blocks).toEqual(w.content);
        expect((delta.delta as Obj).stop_reason).toBe(w.stop_reason);
        expect(delta.usage).toEqual(w.usage);
        const u = w.usage as { input_tokens: number; cache_read_input_tokens: number };
        expect(u.input_tokens + u.cache_read_input_tokens).toBe(a.usage.prompt_tokens);
      }),
      { numRuns: 150 },
    );
  });

  it('requests keep every text verbatim and in order, and pair each tool_use with its tool_result', () => {
    const block = fc.oneof(
      text.map((t) => ({ type: 'text', text: t })),
      fc.constant({ type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } }),
    );
    const turnArb = fc.array(
      fc.record({
        user: fc.array(block, { minLength: 1, maxLength: 3 }),
        says: text,
        call: fc.option(
          fc.record({
            name: fc.constantFrom('a', 'b'),
            input: fc.dictionary(fc.string({ maxLength: 4 }), fc.string({ maxLength: 4 })),
          }),
          { nil: undefined },
        ),
        result: text,
      }),
      { minLength: 1, maxLength: 5 },
    );
    fc.assert(
      fc.property(text, turnArb, (system, turns) => {
        const messages: Obj[] = [];
        const expected: string[] = system ? [system] : [];
        turns.forEach((t, i) => {
          const results =
            i > 0 && turns[i - 1].call
              ? [{ type: 'tool_result', tool_use_id: `toolu_${i - 1}`, content: turns[i - 1].result }]
              : [];
          if (results.length) expected.push(turns[i - 1].result);
          for (const b of t.user) if (b.type === 'text') expected.push(b.text as string);
          messages.push({ role: 'user', content: [...results, ...t.user] });
          const content: Obj[] = [{ type: 'text', text: t.says }];
          expected.push(t.says);
          if (t.call) content.push({ type: 'tool_use', id: `toolu_${i}`, name: t.call.name, input: t.call.input });
          messages.push({ role: 'assistant', content });
        });
        const { body } = parseAnthropic(
          { model: 'm', max_tokens: 5, system: system || undefined, messages },
          { tenant: 't', maxMessages: 1000 },
        );
        const flat = body.messages.map((m) => flattenContent(m.content)).join('\u0000');
        let at = 0;
        for (const s of expected) {
          const i = flat.indexOf(s, at);
          expect(i).toBeGreaterThanOrEqual(0);
          at = i + s.length;
        }
        const callIds = body.messages.flatMap((m) => (m.tool_calls ?? []).map((c) => c.id));
        const resultIds = body.messages.filter((m) => m.role === 'tool').map((m) => m.tool_call_id);
        expect(resultIds).toEqual(callIds.filter((id) => Number(id.slice(6)) < turns.length - 1));
        // A tool message always follows the assistant turn that called it.
        body.messages.forEach((m: ChatMessage, i) => {
          if (m.role === 'tool') expect(['assistant', 'tool']).toContain(body.messages[i - 1].role);
        });
        for (const m of body.messages)
          for (const c of m.tool_calls ?? [])
            expect(JSON.parse(c.function.arguments)).toEqual(turns[Number(c.id.slice(6))].call!.input);
      }),
      { numRuns: 150 },
    );
  });
});

describe('Responses translation', () => {
  // reasoning items sealed (include: reasoning.encrypted_content): the stream's blob must equal the whole answer's
  const state = (customTools: string[] = []): ResponsesState => ({
    model: 'm',
    id: 'resp_1',
    createdAt: 1,
    store: false,
    echo: {},
    conversation: [],
    customTools,
    sealReasoning: true,
  });
  const store = new MemoryResponseStore({ ttlSeconds: 60, maxEntryBytes: 1 << 20, maxBytes: 1 << 24 });

  it('stream ≡ whole: the completed response equals the whole answer; deltas add up to the items', async () => {
    await fc.assert(
      fc.asyncProperty(answerArb, cutsArb, async (a, cuts) => {
        const t = new ResponsesStream(ctx(state()), store);
        let sse = '';
        for (const c of chunks(a, cuts)) sse += t.chunk(c);
        sse += await t.done();
        const evs = events(sse);
        expect(evs.map((e) => e.data.sequence_number)).toEqual(evs.map((_, i) => i));
        expect(evs[0].event).toBe('response.created');
        const last = evs.at(-1)!;
        expect(last.event).toBe(a.finish === 'length' ? 'response.incomplete' : 'response.completed');
        const streamed = last.data.response as Obj;
        const w = await toResponseObject(store, whole(a), extractUsage(whole(a)), ctx(state()));
        const strip = (items: unknown): unknown => (items as Obj[]).map(({ id: _id, ...rest }) => rest);
        expect(strip(streamed.output)).toEqual(strip(w.output));
        expect(streamed.usage).toEqual(w.usage);
        expect(streamed.status).toBe(w.status);
        const text = evs
          .filter((e) => e.event === 'response.output_text.delta')
          .map((e) => e.data.delta)
          .join('');
        expect(text).toBe(a.content);
        const args = evs
          .filter((e) => e.event === 'response.function_call_arguments.delta')
          .map((e) => e.data.delta)
          .join('');
        expect(args).toBe(a.calls.map((c) => JSON.stringify(c.args)).join(''));
        const added = evs.filter((e) => e.event === 'response.output_item.added').map((e) => e.data.output_index);
        expect(added).toEqual(added.map((_, i) => i));
      }),
      { numRuns: 150 },
    );
  });

  it('input items keep every text in order and each function_call with its output', async () => {
    const itemArb = fc.array(
      fc.oneof(
        text.map((t) => ({ role: 'user', content: t })),
        text.map((t) => ({ type: 'message', role: 'assistant', content: [{ type: 'output_text', text: t }] })),
        fc.record({ name: fc.constantFrom('x', 'y'), arguments: fc.string({ maxLength: 10 }), out: text }),
      ),
      { minLength: 1, maxLength: 8 },
    );
    await fc.assert(
      fc.asyncProperty(itemArb, async (items) => {
        const input: Obj[] = [];
        const expected: string[] = [];
        items.forEach((it, i) => {
          if ('name' in it) {
            input.push(
              { type: 'function_call', call_id: `c${i}`, name: it.name, arguments: it.arguments },
              { type: 'function_call_output', call_id: `c${i}`, output: it.out },
            );
            expected.push(it.arguments, it.out);
          } else {
            input.push(it);
            expected.push(typeof it.content === 'string' ? it.content : it.content[0].text);
          }
        });
        const { body } = await parseResponses(
          { model: 'm', input },
          { tenant: 't', maxMessages: 1000 },
          store,
          () => 'resp_x',
        );
        const flat = body.messages
          .map((m) => flattenContent(m.content) + (m.tool_calls ?? []).map((c) => c.function.arguments).join(''))
          .join('\u0000');
        let at = 0;
        for (const s of expected) {
          const i = flat.indexOf(s, at);
          expect(i).toBeGreaterThanOrEqual(0);
          at = i + s.length;
        }
        const calls = body.messages.flatMap((m) => (m.tool_calls ?? []).map((c) => c.id));
        const outs = body.messages.filter((m) => m.role === 'tool').map((m) => m.tool_call_id);
        expect(outs).toEqual(calls);
      }),
      { numRuns: 150 },
    );
  });
});
