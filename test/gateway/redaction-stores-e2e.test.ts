// Secrets a tenant's agent sends (tool outputs, system prompt, arguments) never land in clear in
// any store: capture files, the artifact directory, session state in Redis and in memory. Real
// sockets: reference workers, the assembled gateway with Redis, capture and compaction on.
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startAssembledGateway } from '../../gateway/assemble.ts';
import { parseConfig } from '../../gateway/config/load.ts';
import { startSimWorker, type SimWorker } from '../../loadtest/sim-worker/index.ts';
import type { ChatMessage } from '../../middleware/types.ts';

const KEY = 'sk-tenant-redact-0123456789';
const SECRET_LINES = [
  '-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBGXpgpsecretbody0001\n=abcd\n-----END PGP PRIVATE KEY BLOCK-----',
  'db_password=lowercasepw77',
  'API_KEY="quoted value with spaces 9"',
  '{"password": "jsonpassw0rd!", "user": "bob"}',
  'database:\n  password: yaml pass phrase 42',
  'curl -H "authorization: bearer lowerbearer0123456789" https://api',
  'postgres://admin:hunter2secret@db.internal:5432/app',
];
const CORES = [
  'gpsecretbody0001',
  'lowercasepw77',
  'quoted value with spaces',
  'jsonpassw0rd',
  'yaml pass phrase',
  'lowerbearer0123',
  'hunter2secret',
];

let workers: SimWorker[] = [];
let gw: Awaited<ReturnType<typeof startAssembledGateway>>;
let dir: string;
const redisUrl = inject('redisUrl');

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ctxgate-redact-'));
  workers = await Promise.all(
    [0].map((i) => startSimWorker({ port: 0, model: 'm', tokenizer: 'qwen3', timeScale: 0, seed: i })),
  );
  const config = parseConfig({
    listen: { host: '127.0.0.1', port: 0 },
    auth: {
      mode: 'keys',
      keys: [{ key: `sha256:${createHash('sha256').update(KEY).digest('hex')}`, tenant: 'redact-tenant' }],
    },
    health: { interval_ms: 0 },
    redis: { url: redisUrl },
    artifacts: { dir: join(dir, 'artifacts') },
    ledger: { path: join(dir, 'usage.sqlite') },
    models: [
      {
        name: 'm',
        tokenizer: 'qwen3',
        layout: 'ctxgate',
        budget_tokens: 2500,
        capture: { enabled: true, sample_rate: 1, dir: join(dir, 'capture') },
        workers: workers.map((w, i) => ({ url: w.url, id: `w${i}` })),
      },
    ],
  });
  // the session state reaches Redis however slowly it answers (at the store's 50 ms a put could
  // stay local on a loaded machine, and the scan of Redis below would pass without checking it)
  gw = await startAssembledGateway(config, { logger: false, redisTimeoutMs: 30_000 });
});
afterAll(async () => {
  await gw?.close();
  await Promise.all(workers.map((w) => w.close()));
  rmSync(dir, { recursive: true, force: true });
});

function history(calls: number): ChatMessage[] {
  const msgs: ChatMessage[] = [
    { role: 'system', content: `You are a coding agent.\n${SECRET_LINES[1]}` },
    { role: 'user', content: 'Deploy the service; the config is in deploy/.' },
  ];
  for (let i = 0; i < calls; i++) {
    const id = `call_${i}`;
    msgs.push({
      role: 'assistant',
      content: '',
      tool_calls: [
        {
          id,
          type: 'function',
          function: {
            name: 'bash',
            arguments: JSON.stringify({ command: `cat deploy/f${i}.env # ${SECRET_LINES[2]}` }),
          },
        },
      ],
    });
    msgs.push({
      role: 'tool',
      tool_call_id: id,
      content: `${SECRET_LINES.join('\n')}\n${`line ${i} of the deploy log, nothing to see\n`.repeat(40)}`,
    });
  }
  return msgs;
}

const walk = (d: string): string[] => {
  try {
    return readdirSync(d).flatMap((f) =>
      statSync(join(d, f)).isDirectory() ? walk(join(d, f)) : [readFileSync(join(d, f), 'utf8')],
    );
  } catch {
    return [];
  }
};

describe('no secret persists in clear', () => {
  it('capture files, artifacts and Redis session state hold only redacted forms', async () => {
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: KEY, maxRetries: 0, timeout: 20_000 });
    for (let call = 1; call <= 10; call++) {
      await client.chat.completions.create(
        { model: 'm', messages: history(call) as never, max_tokens: 8 },
        { headers: { 'x-session-id': 'deploy-1' } },
      );
    }
    const state = await gw.assembled.store.get('redact-tenant', 'deploy-1');
    expect(state).toBeDefined();
    await gw.close(); // flushes capture and session state
    const redis = new Redis(redisUrl);
    const stored: string[] = [JSON.stringify(state)];
    for (const k of await redis.keys('*')) {
      const type = await redis.type(k);
      if (type === 'string') stored.push((await redis.get(k)) ?? '');
      else if (type === 'hash') stored.push(JSON.stringify(await redis.hgetall(k)));
      else if (type === 'stream') stored.push(JSON.stringify(await redis.xrange(k, '-', '+')));
      else if (type === 'list') stored.push(JSON.stringify(await redis.lrange(k, 0, -1)));
    }
    redis.disconnect();
    const captured = walk(join(dir, 'capture'));
    expect(captured.join('').length).toBeGreaterThan(1000); // capture did record the calls
    stored.push(...captured, ...walk(join(dir, 'artifacts')));
    const all = stored.join('\n');
    expect(all).toContain('[REDACTED:');
    for (const c of CORES) expect(all, c).not.toContain(c);
  });
});
