// Per-tenant session quotas through the assembled gateway: with limits.max_sessions = 2 per
// tenant, tenant A opening many sessions evicts only A's own least recently used ones; tenant
// B's session stays cached (break=none) and A's evicted session starts afresh (new_session).
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAssembledGateway } from '../../gateway/assemble.ts';
import { parseConfig } from '../../gateway/config/load.ts';
import { startSimWorker, type SimWorker } from '../../loadtest/sim-worker/index.ts';
import type { ChatMessage } from '../../middleware/types.ts';
import { keysAuth } from '../helpers/keys.ts';

const KEY_A = 'sk-quota-a-0123456789';
const KEY_B = 'sk-quota-b-0123456789';

let worker: SimWorker;
let gw: Awaited<ReturnType<typeof startAssembledGateway>>;

function history(calls: number, topic: string): ChatMessage[] {
  const msgs: ChatMessage[] = [
    { role: 'system', content: 'You are a careful coding agent. Use the bash tool.' },
    { role: 'user', content: `Look into ${topic}.` },
  ];
  for (let i = 0; i < calls; i++) {
    msgs.push({
      role: 'assistant',
      content: '',
      tool_calls: [
        {
          id: `c${i}`,
          type: 'function',
          function: { name: 'bash', arguments: JSON.stringify({ command: `ls dir${i}` }) },
        },
      ],
    });
    msgs.push({ role: 'tool', tool_call_id: `c${i}`, content: `file${i}.txt\n`.repeat(10) });
  }
  return msgs;
}

async function prefixOf(key: string, session: string, calls: number, topic: string): Promise<string> {
  const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: key, maxRetries: 0, timeout: 20_000 });
  const { response } = await client.chat.completions
    .create(
      { model: 'qwen3-32b', messages: history(calls, topic) as never, max_tokens: 8 },
      { headers: { 'x-session-id': session } },
    )
    .withResponse();
  return response.headers.get('x-ctxgate-prefix') ?? '';
}

beforeAll(async () => {
  worker = await startSimWorker({
    port: 0,
    model: 'qwen3-32b',
    tokenizer: 'qwen3',
    kvTokens: 200_000,
    timeScale: 0,
    seed: 1,
  });
  const config = parseConfig(
    {
      listen: { host: '127.0.0.1', port: 0 },
      auth: keysAuth({ 'team-a': KEY_A, 'team-b': KEY_B }),
      health: { interval_ms: 0 },
      limits: { max_sessions: 2 },
      models: [
        {
          name: 'qwen3-32b',
          tokenizer: 'qwen3',
          layout: 'ctxgate',
          workers: [{ url: worker.url, id: 'w0', kv_tokens: 200_000 }],
        },
      ],
    },
    'quota-e2e',
  );
  gw = await startAssembledGateway(config, { logger: false, reporting: false });
});

afterAll(async () => {
  await gw?.close();
  await worker?.close();
});

describe('per-tenant session quota', () => {
  it("tenant A filling its quota evicts A's own sessions, never tenant B's", async () => {
    expect(await prefixOf(KEY_B, 'b-main', 1, 'B')).toMatch(/break=new_session/);
    expect(await prefixOf(KEY_B, 'b-main', 2, 'B')).toMatch(/break=none/);
    for (let i = 0; i < 6; i++) expect(await prefixOf(KEY_A, `a-${i}`, 1, `A${i}`)).toMatch(/break=new_session/);
    // B's session survived A's flood: its next call continues the cached prefix.
    expect(await prefixOf(KEY_B, 'b-main', 3, 'B')).toMatch(/break=none/);
    // A's most recent session is kept; its oldest was evicted and starts afresh.
    expect(await prefixOf(KEY_A, 'a-5', 2, 'A5')).toMatch(/break=none/);
    expect(await prefixOf(KEY_A, 'a-0', 2, 'A0')).toMatch(/break=new_session/);
  });
});
