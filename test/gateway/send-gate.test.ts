// The send gate (gateway/proxy/send-gate.ts) over real sockets: the session state a call writes
// after its body went upstream is stored before the answer on every path, and the session's lock
// is released. Success: two replicas on one real redis-server, a session's calls alternating
// between them back to back (the official openai SDK): each call reads the one before it (the
// stored call count and the prefix diagnostics say so). Failure paths on one gateway: the worker
// unreachable, no healthy worker (nothing was ever sent: the handler opens the gate), the worker answering 5xx, the
// client leaving while the worker hangs: each leaves the call's state stored and the lock free,
// as the write from the next turn of the event loop did before the gate. Each twice: a short body
// (one buffer upstream) and one over SPLICE_PIECES_MIN_BYTES (sent in pieces, proxy/body.ts: the
// gate opens when undici wrote the last piece, or at the worker's answer or failure).
// No render pool (`render_pool.threads: 0`): no call here reaches its threshold (the longest system
// prompt is ~8 k characters, DEFAULT_OFFLOAD_MIN_CHARS 16 k), so the pool tested nothing, yet each
// of the 8 gateways started threads that loaded the tokenizer before listening (25 s a run, 181 s
// under load).
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:net';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startAssembledGateway } from '../../gateway/assemble.ts';
import { parseConfig } from '../../gateway/config/load.ts';
import { SPLICE_PIECES_MIN_BYTES } from '../../gateway/proxy/body.ts';
import { sessionLockOf } from '../../middleware/session/session-lock.ts';
import { type FakeUpstream, startFakeUpstream } from '../helpers/fake-upstream.ts';
import { until } from '../helpers/gateway.ts';

const redisUrl = inject('redisUrl');
const TENANT = 'default';
/** Redis answers count however late they come on a loaded machine. */
const REDIS_TIMEOUT_MS = 30_000;
type Gateway = Awaited<ReturnType<typeof startAssembledGateway>>;

const NO_POOL = { threads: 0 };
/** Replicas of one deployment share the salt secret. */
const SALT_SECRET = randomUUID();
const short = 'You are a careful coding agent. Explain each step. '.repeat(20);
const SYSTEMS: [string, string][] = [
  ['one buffer', short],
  ['in pieces', short.repeat(Math.ceil((2 * SPLICE_PIECES_MIN_BYTES) / short.length))],
];

/** A port nothing listens on (bound, then closed). */
async function deadPort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as { port: number }).port;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

function client(gw: Gateway, id: string): OpenAI {
  return new OpenAI({
    baseURL: `${gw.url}/v1`,
    apiKey: 'none',
    maxRetries: 0,
    defaultHeaders: { 'x-session-id': id },
  });
}

for (const [how, system] of SYSTEMS) {
  describe(`two replicas on one redis-server: each call reads the state of the call before it (${how})`, () => {
    const model = `m-${randomUUID().slice(0, 8)}`;
    let up: FakeUpstream;
    const replicas: Gateway[] = [];
    beforeAll(async () => {
      up = await startFakeUpstream();
      for (let i = 0; i < 2; i++) {
        const config = parseConfig({
          listen: { host: '127.0.0.1', port: 0 },
          health: { interval_ms: 0 },
          redis: { url: redisUrl },
          tenancy: { cache_salt_secret: SALT_SECRET },
          render_pool: NO_POOL,
          models: [{ name: model, tokenizer: 'qwen3', workers: [{ url: up.url, id: 'w0' }] }],
        });
        replicas.push(
          await startAssembledGateway(config, { logger: false, reporting: false, redisTimeoutMs: REDIS_TIMEOUT_MS }),
        );
      }
    }, 120_000);
    afterAll(async () => {
      await Promise.all(replicas.map((g) => g.close()));
      await up?.close();
    });

    it('alternating calls: the stored count follows every call, no break after the first', async () => {
      const id = `gate-${randomUUID()}`;
      const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'system', content: system }];
      const CALLS = 8;
      for (let i = 0; i < CALLS; i++) {
        messages.push({ role: 'user', content: `Step ${i}: inspect file_${i}.py and report.` });
        const gw = replicas[i % 2];
        const { data, response } = await client(gw, id)
          .chat.completions.create({ model, max_tokens: 4, messages })
          .withResponse();
        // The answer came: the call's state is in Redis, for either replica.
        const other = replicas[(i + 1) % 2];
        expect((await other.assembled.store.get(TENANT, id))?.calls, `call ${i}`).toBe(i + 1);
        const prefix = response.headers.get('x-ctxgate-prefix') ?? '';
        if (i === 0) expect(prefix).toContain('break=new_session');
        else expect(prefix, `call ${i}`).toContain('break=none');
        messages.push({ role: 'assistant', content: data.choices[0].message.content ?? '' });
      }
      for (const gw of replicas) expect(sessionLockOf(gw.assembled.store).size).toBe(0);
    }, 120_000);
  });

  describe(`failure paths leave the call state stored and the lock free (${how})`, () => {
    const model = `m-${randomUUID().slice(0, 8)}`;
    let up: FakeUpstream;
    let gw: Gateway;
    let dead: Gateway;
    beforeAll(async () => {
      up = await startFakeUpstream();
      const cfg = (url: string) =>
        parseConfig({
          listen: { host: '127.0.0.1', port: 0 },
          health: { interval_ms: 0 },
          upstream: { attempts: 1 },
          render_pool: NO_POOL,
          models: [{ name: model, tokenizer: 'qwen3', workers: [{ url, id: 'w0' }] }],
        });
      gw = await startAssembledGateway(cfg(up.url), { logger: false, reporting: false, tracing: null });
      dead = await startAssembledGateway(cfg(`http://127.0.0.1:${await deadPort()}`), {
        logger: false,
        reporting: false,
        tracing: null,
      });
    }, 120_000);
    afterAll(async () => {
      await gw?.close();
      await dead?.close();
      await up?.close();
    });

    const ask = (g: Gateway, id: string, signal?: AbortSignal) =>
      client(g, id).chat.completions.create(
        {
          model,
          max_tokens: 4,
          messages: [
            { role: 'system', content: system },
            { role: 'user', content: 'Go.' },
          ],
        },
        { signal },
      );

    it('worker unreachable: an error answer, the state stored', async () => {
      const id = `gate-${randomUUID()}`;
      await expect(ask(dead, id)).rejects.toMatchObject({ status: 502 });
      expect((await dead.assembled.store.get(TENANT, id))?.calls).toBe(1);
      expect(sessionLockOf(dead.assembled.store).size).toBe(0);
      // The next call of the session reads it.
      await expect(ask(dead, id)).rejects.toMatchObject({ status: 502 });
      expect((await dead.assembled.store.get(TENANT, id))?.calls).toBe(2);
    }, 60_000);

    it('no healthy worker (nothing dispatched, the handler opens the gate): 503, the state stored', async () => {
      const id = `gate-${randomUUID()}`;
      const w = gw.ctx.fleet.get(model)!.workers[0];
      w.healthy = false;
      try {
        await expect(ask(gw, id)).rejects.toMatchObject({ status: 503 });
      } finally {
        w.healthy = true;
      }
      expect((await gw.assembled.store.get(TENANT, id))?.calls).toBe(1);
      expect(sessionLockOf(gw.assembled.store).size).toBe(0);
    }, 60_000);

    it('worker answers 500: the error relayed, the state stored', async () => {
      const id = `gate-${randomUUID()}`;
      up.knobs.status = 500;
      try {
        await expect(ask(gw, id)).rejects.toMatchObject({ status: 500 });
      } finally {
        up.knobs.status = 0;
      }
      expect((await gw.assembled.store.get(TENANT, id))?.calls).toBe(1);
      expect(sessionLockOf(gw.assembled.store).size).toBe(0);
    }, 60_000);

    it('client leaves while the worker hangs: the state stored, the lock free', async () => {
      const id = `gate-${randomUUID()}`;
      up.knobs.hang = true;
      const before = up.received;
      const ac = new AbortController();
      try {
        const call = ask(gw, id, ac.signal);
        await until(() => up.received > before, 60_000);
        ac.abort();
        await expect(call).rejects.toThrow();
        await until(() => up.aborted > 0, 60_000);
      } finally {
        up.knobs.hang = false;
      }
      await until(() => sessionLockOf(gw.assembled.store).size === 0, 60_000);
      expect((await gw.assembled.store.get(TENANT, id))?.calls).toBe(1);
    }, 60_000);
  });
}
