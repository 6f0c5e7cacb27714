// Stored Responses (memory and a real redis-server: tenant namespacing, TTL, byte caps), harness
// session headers, and the engine adapters' health path.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent } from 'undici';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { parseConfig } from '../../gateway/config/load.ts';
import { harnessHeaders, harnessSessionId } from '../../gateway/ingress/harness-session.ts';
import {
  MemoryResponseStore,
  RedisResponseStore,
  type ResponseStore,
  type StoredResponse,
} from '../../gateway/ingress/responses-store.ts';
import { createMetrics } from '../../gateway/metrics.ts';
import { ENGINES } from '../../gateway/upstream/engines.ts';
import { createFleet } from '../../gateway/upstream/fleet.ts';
import { checkWorker } from '../../gateway/upstream/health.ts';
import { Registry } from 'prom-client';

const entry = (text: string): StoredResponse => ({
  response: { id: 'resp_1', output_text: text },
  messages: [{ role: 'user', content: text }],
});
const opts = { ttlSeconds: 60, maxEntryBytes: 10_000, maxBytes: 50_000 };
const REDIS_WAIT_MS = 60_000;

async function contract(store: ResponseStore): Promise<void> {
  expect(await store.put('a', 'resp_1', entry('hello'))).toBe(true);
  expect((await store.get('a', 'resp_1'))?.messages[0].content).toBe('hello');
  // Another tenant with the same id sees nothing and deletes nothing; ':' in names cannot collide.
  expect(await store.get('b', 'resp_1')).toBeUndefined();
  expect(await store.delete('b', 'resp_1')).toBe(false);
  expect(await store.get('a:resp_1', '')).toBeUndefined();
  // Over the per-entry cap: not stored.
  expect(await store.put('a', 'resp_big', entry('x'.repeat(20_000)))).toBe(false);
  expect(await store.get('a', 'resp_big')).toBeUndefined();
  // What a caller gets back is a copy.
  const got = (await store.get('a', 'resp_1'))!;
  got.messages.push({ role: 'user', content: 'mutated' });
  expect((await store.get('a', 'resp_1'))!.messages).toHaveLength(1);
  expect(await store.delete('a', 'resp_1')).toBe(true);
  expect(await store.get('a', 'resp_1')).toBeUndefined();
}

describe('response store', () => {
  const stores: ResponseStore[] = [];
  afterAll(async () => Promise.all(stores.map((s) => s.close())));

  it('memory: tenant-namespaced, per-entry cap, copies, and a total byte cap (LRU)', async () => {
    const s = new MemoryResponseStore(opts);
    stores.push(s);
    await contract(s);
    for (let i = 0; i < 20; i++) await s.put('a', `r${i}`, entry('y'.repeat(2_000)));
    expect(await s.get('a', 'r0')).toBeUndefined();
    expect(await s.get('a', 'r19')).toBeDefined();
  });

  it('memory: entries expire after the TTL, not before (on an injected clock)', async () => {
    let now = 1_000_000;
    const s = new MemoryResponseStore({ ...opts, ttlSeconds: 1 }, { now: () => now });
    stores.push(s);
    await s.put('a', 'r', entry('soon gone'));
    expect(await s.get('a', 'r')).toBeDefined();
    now += 1_000; // the whole TTL: still there
    expect(await s.get('a', 'r')).toBeDefined();
    now += 1;
    expect(await s.get('a', 'r')).toBeUndefined();
    // a put over a live entry restarts its TTL
    await s.put('a', 'q', entry('first'));
    now += 600;
    await s.put('a', 'q', entry('again'));
    now += 600; // 1.2 s after the first put, 0.6 s after the second
    expect((await s.get('a', 'q'))?.messages).toEqual(entry('again').messages);
    now += 401;
    expect(await s.get('a', 'q')).toBeUndefined();
  });

  it('redis: the same contract, with the TTL set on the key', async () => {
    // Commands wait as long as Redis needs (the product's 500 ms, which also runs while the first
    // command waits for the connection, is a loaded machine's normal delay): an answer that comes
    // late must never read as a miss here.
    const s = new RedisResponseStore(inject('redisUrl'), opts, REDIS_WAIT_MS);
    stores.push(s);
    await contract(s);
    await s.put('a', 'ttl', entry('t'));
    const { Redis } = await import('ioredis');
    const r = new Redis(inject('redisUrl'));
    const ttl = await r.ttl('ctxgate:resp:a:ttl');
    await r.quit();
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(60);
  });

  it('redis: an unreachable server reads as absent and refuses writes, without throwing', async () => {
    const s = new RedisResponseStore('redis://127.0.0.1:1', opts);
    stores.push(s);
    expect(await s.get('a', 'x')).toBeUndefined();
    expect(await s.put('a', 'x', entry('x'))).toBe(false);
    expect(await s.delete('a', 'x')).toBe(false);
  });
});

describe('harness session headers', () => {
  it('maps Claude Code, Codex and OpenCode session headers to x-session-id; an explicit x-session-id wins', () => {
    expect(harnessSessionId({ 'x-claude-code-session-id': 'cc' })).toBe('cc');
    expect(harnessSessionId({ session_id: 'codex' })).toBe('codex');
    expect(harnessSessionId({ conversation_id: 'codex-old' })).toBe('codex-old');
    expect(harnessSessionId({ 'x-opencode-session': 'oc' })).toBe('oc');
    expect(harnessSessionId({ 'user-agent': 'x' })).toBeUndefined();
    expect(harnessHeaders({ 'x-session-id': 'mine', session_id: 'codex' })['x-session-id']).toBe('mine');
    const h = { 'x-opencode-session': 'oc' };
    expect(harnessHeaders(h)).toEqual({ 'x-opencode-session': 'oc', 'x-session-id': 'oc' });
    expect(h).toEqual({ 'x-opencode-session': 'oc' }); // the request's headers are not mutated
  });
});

describe('engine adapters', () => {
  it("check health on the flavor's path: /health for vllm and sglang, /v1/models for openai", async () => {
    const seen: string[] = [];
    const server = createServer((req, res) => {
      seen.push(req.url ?? '');
      res.writeHead(req.url === '/v1/models' ? 200 : 404).end('{}');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const agent = new Agent();
    try {
      for (const flavor of ['vllm', 'sglang', 'openai'] as const) {
        const config = parseConfig({ models: [{ name: 'm', flavor, workers: [{ url, id: flavor }] }] }, 'engines');
        const w = createFleet(config, createMetrics(new Registry())).get('m')!.workers[0];
        expect(w.healthPath).toBe(ENGINES[flavor].healthPath);
        expect(await checkWorker(w, agent, 2000)).toBe(flavor === 'openai');
        await w.close();
      }
      expect(seen).toEqual(['/health', '/health', '/v1/models']);
    } finally {
      await agent.close();
      server.close();
    }
  });
});
