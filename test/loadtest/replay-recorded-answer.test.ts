// In replays the reference worker answers with the recorded assistant turn (`sim_output`), so the
// engine caches what the agent actually got back and the next call hits it, as on vLLM/SGLang.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordedAnswer } from '../../loadtest/formats/recorded-answer.ts';
import type { Session } from '../../loadtest/formats/types.ts';
import { startFleet } from '../../loadtest/replay/fleet.ts';
import { replaySessions } from '../../loadtest/replay/runner.ts';
import type { FleetSpec } from '../../loadtest/replay/types.ts';
import { startSimWorker, type SimWorker } from '../../loadtest/sim-worker/index.ts';
import type { ChatMessage } from '../../middleware/types.ts';

const tools = [
  {
    type: 'function' as const,
    function: {
      name: 'bash',
      description: 'run',
      parameters: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] },
    },
  },
];

/** A recorded session: long assistant explanations and tool calls the worker would never generate itself. */
function session(): Session {
  const msgs: ChatMessage[] = [
    { role: 'system', content: 'You are a coding agent. '.repeat(30) },
    { role: 'user', content: 'Find why the parser drops the last line.' },
  ];
  const calls: Session['calls'] = [];
  for (let i = 0; i < 4; i++) {
    calls.push({ body: { model: 'x', messages: msgs.slice(), tools } });
    const id = `call_${i}`;
    msgs.push({
      role: 'assistant',
      content: `Step ${i}: ` + 'the parser splits on newlines and loses the trailing fragment; '.repeat(12),
      tool_calls: [
        {
          id,
          type: 'function',
          function: {
            name: 'bash',
            arguments: JSON.stringify({ command: `sed -n ${i * 10},${i * 10 + 9}p parser.py` }),
          },
        },
      ],
    });
    msgs.push({ role: 'tool', tool_call_id: id, content: `line ${i}\n`.repeat(5) });
  }
  return { id: 'rec-1', source: 'test', calls };
}

describe('recorded answers in replays', () => {
  let worker: SimWorker;
  beforeAll(async () => {
    worker = await startSimWorker({ model: 'sim', tokenizer: 'llama3_1' });
  });
  afterAll(async () => worker?.close());

  it('recordedAnswer is the assistant turn the next call repeats; none for the last call', () => {
    const s = session();
    const a = recordedAnswer(s, 1)!;
    expect(a.content).toBe(s.calls[2].body.messages[4].content);
    expect(a.tool_calls).toEqual((s.calls[2].body.messages[4] as { tool_calls: unknown[] }).tool_calls);
    expect(recordedAnswer(s, 3)).toBeUndefined();
  });

  it('the worker returns sim_output verbatim (content and tool calls) and caches it', async () => {
    const s = session();
    const client = new OpenAI({ baseURL: worker.url + '/v1', apiKey: 'x', maxRetries: 0 });
    const answer = recordedAnswer(s, 0)!;
    const body = {
      model: 'sim',
      messages: s.calls[0].body.messages,
      tools,
      sim_output: answer,
    } as unknown as OpenAI.Chat.ChatCompletionCreateParamsNonStreaming;
    const r = await client.chat.completions.create(body);
    expect(r.choices[0].message.content).toBe(answer.content);
    expect(r.choices[0].message.tool_calls).toEqual(answer.tool_calls);
    expect(r.choices[0].finish_reason).toBe('tool_calls');
    const next = await client.chat.completions.create({
      model: 'sim',
      messages: s.calls[1].body.messages as OpenAI.Chat.ChatCompletionMessageParam[],
      tools,
    });
    // Everything up to the tool result is cached: prompt and the recorded answer (block-aligned).
    expect(next.usage!.prompt_tokens_details!.cached_tokens).toBeGreaterThanOrEqual(
      r.usage!.prompt_tokens + r.usage!.completion_tokens - 16,
    );
  });

  it('bench replay sends each call its recorded answer: the next call hits the answer tokens too', async () => {
    const spec: FleetSpec = {
      model: 'sim',
      tokenizer: 'llama3_1',
      flavor: 'vllm',
      layout: 'passthrough',
      policy: 'round_robin',
      workers: 1,
      kvTokens: 1_000_000,
      blockSize: 16,
      timeScale: 0,
      seed: 0,
    };
    const fleet = await startFleet(spec);
    try {
      expect(fleet.recordedAnswers).toBe(true);
      const recs = await replaySessions([session()], fleet, { concurrency: 1, thinkMs: 0, modeledTtft: true });
      expect(recs.every((r) => r.ok)).toBe(true);
      for (let k = 1; k < recs.length; k++) {
        // The recorded answer is ~150 tokens; a generated one would diverge right after the prompt.
        expect(recs[k].cached_tokens).toBeGreaterThanOrEqual(
          recs[k - 1].prompt_tokens + recs[k - 1].completion_tokens - 16,
        );
        expect(recs[k - 1].completion_tokens).toBeGreaterThan(100);
      }
    } finally {
      await fleet.close();
    }
  });
});
