// Traffic capture through the assembled gateway: each line is the agent's original body plus
// the worker's usage (recorded once the worker answered), and the file replays as a session.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAssembledGateway } from '../../gateway/assemble.ts';
import { parseConfig } from '../../gateway/config/load.ts';
import { readSessions } from '../../loadtest/formats/read-sessions.ts';
import { startSimWorker, type SimWorker } from '../../loadtest/sim-worker/index.ts';
import type { ChatMessage } from '../../middleware/types.ts';
import { until } from '../helpers/until.ts';

let worker: SimWorker;
let gw: Awaited<ReturnType<typeof startAssembledGateway>>;
let dir: string;

const turn = (n: number): ChatMessage[] => {
  // The date line is volatile: the ctxgate layout rewrites it, the capture must not.
  const msgs: ChatMessage[] = [
    { role: 'system', content: `Current date: 2026-11-30T03:1${n}:00Z\nYou are a careful coding agent.` },
    { role: 'user', content: 'Explain the build failure in src/app.py. '.repeat(20) },
  ];
  for (let i = 0; i < n; i++)
    msgs.push(
      { role: 'assistant', content: `step ${i} done` },
      { role: 'user', content: `continue with step ${i + 1}` },
    );
  return msgs;
};

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ctxgate-capture-'));
  worker = await startSimWorker({
    port: 0,
    model: 'qwen3-32b',
    tokenizer: 'qwen3',
    kvTokens: 200_000,
    timeScale: 0,
    seed: 3,
  });
  const config = parseConfig(
    {
      listen: { host: '127.0.0.1', port: 0 },
      auth: { mode: 'none' },
      health: { interval_ms: 0 },
      models: [
        {
          name: 'qwen3-32b',
          tokenizer: 'qwen3',
          layout: 'ctxgate',
          workers: [{ url: worker.url, id: 'w0' }],
          capture: { enabled: true, sample_rate: 1, dir },
        },
      ],
    },
    'capture-usage',
  );
  gw = await startAssembledGateway(config, { logger: false, reporting: false });
});

afterAll(async () => {
  await gw?.close();
  await worker?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('traffic capture through the gateway', () => {
  it("records the agent's original body with the worker's usage, and replays", async () => {
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'x', maxRetries: 0 });
    const headers = { 'x-session-id': 'cap-1' };
    const answers: OpenAI.Chat.ChatCompletion[] = [];
    for (let n = 0; n < 3; n++)
      answers.push(
        await client.chat.completions.create(
          { model: 'qwen3-32b', messages: turn(n) as OpenAI.Chat.ChatCompletionMessageParam[], max_tokens: 5 },
          { headers },
        ),
      );
    expect(answers[2].usage?.prompt_tokens_details?.cached_tokens).toBeGreaterThan(0);

    // observe() runs after the response; wait for the three lines to be handed to the writer.
    const capture = gw.assembled.captures.get('qwen3-32b')!;
    await until(() => capture.stats().recorded >= 3);
    await capture.flush();
    expect(capture.stats().recorded).toBe(3);

    const files = readdirSync(dir, { recursive: true, withFileTypes: true })
      .filter((e) => e.isFile())
      .map((e) => join(e.parentPath, e.name));
    expect(files).toHaveLength(1);
    const lines = readFileSync(files[0], 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { messages: ChatMessage[]; _meta: { recorded_usage?: Record<string, number> } });
    expect(lines).toHaveLength(3);
    lines.forEach((l, i) => {
      expect(l.messages).toEqual(turn(i)); // the agent's body, not the layout's rewrite
      expect(l._meta.recorded_usage).toEqual({
        prompt_tokens: answers[i].usage!.prompt_tokens,
        cached_tokens: answers[i].usage!.prompt_tokens_details!.cached_tokens,
        completion_tokens: answers[i].usage!.completion_tokens,
      });
    });

    const [s] = await readSessions(files);
    expect(s.calls).toHaveLength(3);
    expect(s.calls[2].recordedUsage?.cached_tokens).toBe(answers[2].usage!.prompt_tokens_details!.cached_tokens);
    expect(s.calls[1].body.messages).toEqual(turn(1));
  });

  it("records an Anthropic client's own body, redacted, beside the canonical chat body", async () => {
    const client = new Anthropic({ baseURL: gw.url, apiKey: 'x', maxRetries: 0 });
    const secret = 'AKIAIOSFODNN7EXAMPLE';
    const body = {
      model: 'qwen3-32b',
      max_tokens: 5,
      system: [
        {
          type: 'text' as const,
          text: 'You are a careful coding agent.',
          cache_control: { type: 'ephemeral' as const },
        },
      ],
      messages: [
        {
          role: 'user' as const,
          content: [{ type: 'text' as const, text: `deploy with aws_access_key_id=${secret}` }],
        },
      ],
    };
    await client.messages.create(body, { headers: { 'x-session-id': 'cap-anthropic' } });
    const capture = gw.assembled.captures.get('qwen3-32b')!;
    const file = capture.pathFor('default', 'cap-anthropic');
    let text = '';
    await until(async () => {
      await capture.flush();
      try {
        text = readFileSync(file, 'utf8');
      } catch {
        // not written yet
      }
      return text !== '';
    });
    expect(text).not.toContain(secret);
    const line = JSON.parse(text.trim().split('\n')[0]) as {
      messages: ChatMessage[];
      _meta: { client?: { api: string; body: typeof body } };
    };
    // The canonical chat body (replayable) ...
    expect(line.messages[0]).toMatchObject({ role: 'system', content: 'You are a careful coding agent.' });
    // ... and the client's own, in its API's shape: system blocks, cache_control, content blocks.
    expect(line._meta.client?.api).toBe('anthropic-messages');
    const original = line._meta.client!.body;
    expect(original.system).toEqual(body.system);
    expect(original.max_tokens).toBe(5);
    expect(original.messages[0].content[0].type).toBe('text');
    expect(original.messages[0].content[0].text).toMatch(/^deploy with aws_access_key_id=/);
  });
});
