// CPU an ingress adapter adds per call, in-process and on the same bodies as the chat path: request
// translation (validate + canonical form + the upstream body's JSON) and answer translation (the
// upstream chat completion into the API's answer). The body is parsed as the gateway parses it: by
// the body memo, against the session's previous call (so an unchanged history comes back as the
// same objects, as deployed). Wall-clock runs through the gateway carry tens of
// milliseconds of machine noise on a busy host; this isolates the adapter's own work, as process CPU
// time (user + system, so preemption by other processes is not counted). Medians of alternating
// batches, so warm-up and noise hit every API alike.
import { createHmac } from 'node:crypto';
import { BodyMemo } from '../../gateway/body/body-memo.ts';
import { DEFAULT_MAX_JSON_DEPTH } from '../../gateway/config/schema.ts';
import { toAnthropicMessage } from '../../gateway/ingress/anthropic-answer.ts';
import { parseAnthropic } from '../../gateway/ingress/anthropic-request.ts';
import { parseChat } from '../../gateway/ingress/openai-chat.ts';
import { toResponseObject } from '../../gateway/ingress/responses-answer.ts';
import { parseResponses } from '../../gateway/ingress/responses-request.ts';
import { MemoryResponseStore } from '../../gateway/ingress/responses-store.ts';
import type { AnswerContext } from '../../gateway/ingress/types.ts';
import { extractUsage } from '../../gateway/accounting/record/extract.ts';
import { sessionBodies } from './growing-sessions.ts';
import { chatToAnthropic, chatToResponses } from './ingress-bodies.ts';

/** The signing MAC the gateway passes (tenancy secret, thinking-signature label). */
const mac = (data: string): string => createHmac('sha256', 'test-signing-key').update(data).digest('base64url');

const BATCH = 20;

const BATCHES = 15;
const ANSWER = {
  id: 'c',
  object: 'chat.completion',
  choices: [
    {
      index: 0,
      message: {
        role: 'assistant',
        content: 'Looking at src/auth/claims.py now.',
        // Thinking as reasoning models send it: the Anthropic path signs it (an HMAC over the text).
        reasoning_content:
          'The failing test reads the claims before the token is verified; check the order in claims.py first. '.repeat(
            4,
          ),
        tool_calls: [
          {
            id: 'call_1',
            type: 'function',
            function: { name: 'read_file', arguments: '{"path":"src/auth/claims.py"}' },
          },
        ],
      },
      finish_reason: 'tool_calls',
    },
  ],
  usage: { prompt_tokens: 17000, completion_tokens: 16, prompt_tokens_details: { cached_tokens: 16000 } },
};

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

export interface IngressCpu {
  /** Prompt size of the bodies measured (characters of the chat body). */
  body_chars: number;
  chat_us: number;
  anthropic_us: number;
  responses_us: number;
}

/** Per-call adapter CPU (µs) on the last call of a growing session (the largest body). */
export async function measureIngressCpu(model: string): Promise<IngressCpu> {
  const bodies = sessionBodies(0, { slots: 1, model });
  const both = bodies.slice(-2).map(([head, tail]) => `${head}0-1${tail}`);
  const chat = both[1];
  const convert = { chat: (j: string) => j, anthropic: chatToAnthropic, responses: chatToResponses };
  // Each API's body memo holds the session's previous call; each measured call is parsed against it.
  const memos = { chat: new BodyMemo(), anthropic: new BodyMemo(), responses: new BodyMemo() };
  for (const k of ['chat', 'anthropic', 'responses'] as const)
    memos[k].keep(memos[k].parse('t', Buffer.from(convert[k](both[0])), DEFAULT_MAX_JSON_DEPTH).pending);
  const raw = {
    chat: Buffer.from(chat),
    anthropic: Buffer.from(chatToAnthropic(chat)),
    responses: Buffer.from(chatToResponses(chat)),
  };
  const parse = (k: keyof typeof raw): unknown => memos[k].parse('t', raw[k], DEFAULT_MAX_JSON_DEPTH).value;
  const ctx = { tenant: 't', maxMessages: 10_000, mac };
  const store = new MemoryResponseStore({ ttlSeconds: 60, maxEntryBytes: 1 << 24, maxBytes: 1 << 26 });
  const answer = (state: unknown): AnswerContext => ({
    requestId: 'r',
    tenant: 't',
    promptTokens: 17000,
    state,
    readUsage: extractUsage,
    mac,
  });
  const usage = extractUsage(ANSWER);
  // Each path does what the gateway does on it: the body parser's parse, the
  // adapter's parse, the upstream body's JSON, and the answer back to the client's JSON.
  const paths: Record<'chat' | 'anthropic' | 'responses', () => Promise<void>> = {
    chat: async () => {
      // The worker's answer goes back as its own bytes: nothing to translate.
      const r = parseChat(parse('chat'), ctx);
      JSON.stringify(r.body);
    },
    anthropic: async () => {
      const r = parseAnthropic(parse('anthropic'), ctx);
      JSON.stringify(r.body);
      JSON.stringify(toAnthropicMessage(ANSWER, usage, answer(r.state)));
    },
    responses: async () => {
      const r = await parseResponses(parse('responses'), ctx, store, () => 'resp_1');
      JSON.stringify(r.body);
      JSON.stringify(await toResponseObject(store, ANSWER, usage, answer(r.state)));
    },
  };
  const times: Record<string, number[]> = { chat: [], anthropic: [], responses: [] };
  for (let b = 0; b < BATCHES; b++) {
    for (const [name, f] of Object.entries(paths)) {
      // CPU time, not wall time: on a shared host, time the thread spends preempted is not the adapter's.
      const t = process.cpuUsage();
      for (let i = 0; i < BATCH; i++) await f();
      const d = process.cpuUsage(t);
      times[name].push((d.user + d.system) / BATCH);
    }
  }
  await store.close();
  return {
    body_chars: chat.length,
    chat_us: median(times.chat),
    anthropic_us: median(times.anthropic),
    responses_us: median(times.responses),
  };
}
