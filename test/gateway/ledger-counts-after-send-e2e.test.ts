// The ledger stage counts a call's new tool outputs after the upstream send (after-send.ts), yet the
// gateway answers only once the session state holding those counts is stored: two assembled
// gateways on one real redis-server (no read cache, so every get decodes what Redis holds) take a
// session's calls in turn, and right after each answer the stored ledger part holds every
// observation with its text's own count, a stale read has its tombstone, and the other gateway's
// next call builds on that state. Reference worker, the official openai SDK as client.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { OPEN_PRINCIPAL } from '../../gateway/auth.ts';
import { startAssembledGateway } from '../../gateway/assemble.ts';
import { parseConfig } from '../../gateway/config/load.ts';
import { readLedger } from '../../middleware/ledger/slot.ts';
import { RedisSessionStore } from '../../middleware/session/redis-store.ts';
import { loadTokenizer } from '../../middleware/tokens/registry.ts';
import type { ChatMessage } from '../../middleware/types.ts';
import { startSimWorker, type SimWorker } from '../../loadtest/sim-worker/index.ts';

let worker: SimWorker;
beforeAll(async () => {
  worker = await startSimWorker({ port: 0, model: 'm', tokenizer: 'qwen3', kvTokens: 200_000, timeScale: 0, seed: 1 });
});
afterAll(async () => worker?.close());

const source = (k: number) =>
  Array.from({ length: 40 }, (_, i) => `${i + 1}\tdef after_send_e2e_${k}_${i}(x):  return x * ${i}`).join('\n');

/** The session's messages up to call `calls`: reads of files, every 3rd call an edit of the file read 2 calls before. */
function history(calls: number): ChatMessage[] {
  const msgs: ChatMessage[] = [{ role: 'user', content: 'Fix the bug in src/.' }];
  for (let k = 1; k <= calls; k++) {
    const id = `call_${k}`;
    const edit = k % 3 === 0;
    const command = edit ? `sed -i 's/a/b/' src/f${k - 2}.py` : `cat src/f${k}.py`;
    msgs.push(
      {
        role: 'assistant',
        content: '',
        tool_calls: [{ id, type: 'function', function: { name: 'bash', arguments: JSON.stringify({ command }) } }],
      },
      { role: 'tool', tool_call_id: id, content: edit ? '' : source(k) },
    );
  }
  return msgs;
}

const tools = [
  {
    type: 'function' as const,
    function: { name: 'bash', parameters: { type: 'object', properties: { command: { type: 'string' } } } },
  },
];

describe('ledger counts after the send, two gateways on one redis-server', () => {
  it('each answer comes after a stored state with every count, which the other gateway builds on', async () => {
    const url = inject('redisUrl');
    expect(url, 'redis-server must be running (test/global-setup.ts)').toMatch(/^redis:\/\//);
    const stores = [0, 1, 2].map(() => new RedisSessionStore({ url, commandTimeoutMs: 5000, readCacheBytes: 0 }));
    const config = parseConfig(
      {
        listen: { host: '127.0.0.1', port: 0 },
        auth: { mode: 'none' },
        health: { interval_ms: 0 },
        render_pool: { threads: 0 },
        models: [{ name: 'm', tokenizer: 'qwen3', layout: 'ctxgate', workers: [{ url: worker.url, id: 'w0' }] }],
      },
      'e2e',
    );
    const gws = await Promise.all(
      [0, 1].map((i) => startAssembledGateway(config, { logger: false, reporting: false, store: stores[i] })),
    );
    const tok = await loadTokenizer('qwen3');
    const session = `after-send-${process.pid}`;
    try {
      const clients = gws.map(
        (gw) => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'none', maxRetries: 0, timeout: 20_000 }),
      );
      for (let call = 1; call <= 7; call++) {
        const msgs = history(call);
        await clients[call % 2].chat.completions.create(
          { model: 'm', messages: msgs as never, tools, max_tokens: 8 },
          { headers: { 'x-session-id': session } },
        );
        // Read back through a third client of the same redis-server, right after the answer.
        const st = await stores[2].get(OPEN_PRINCIPAL.tenant, session);
        const ledger = readLedger(st!)!;
        expect(ledger.seen).toBe(msgs.length);
        expect(ledger.observations.map((o) => o.call)).toEqual(Array.from({ length: call }, (_, i) => i + 1));
        for (const o of ledger.observations)
          expect(o.tokens, `call ${o.call}`).toBe(tok.encode(msgs[o.index].content as string).length);
        expect(ledger.tombstones.length).toBe(Math.floor(call / 3));
      }
    } finally {
      for (const gw of gws) await gw.close();
      for (const s of stores) await s.close();
    }
  }, 60_000);
});
