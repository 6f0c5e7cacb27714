// The render pool (gateway/workers-pool/): a big call renders and tokenises on a worker thread
// with exactly the ids, block hashes, diagnostics and receipts the event loop computes; tenants
// are served in turn; the queue is bounded (429/503 in the caller's shape); /health answers while
// a 400k-character prompt is being tokenised (an ordering, not a timing, claim); close() ends it.
import OpenAI from 'openai';
import { Piscina, type PiscinaTask } from 'piscina';
import { afterEach, describe, expect, it } from 'vitest';
import { FairTaskQueue } from '../../gateway/workers-pool/fair-queue.ts';
import { createRenderPool, type RenderPool } from '../../gateway/workers-pool/pool.ts';
import { createPipeline } from '../../middleware/pipeline.ts';
import type { RenderOffload } from '../../middleware/tokens/render-tokens.ts';
import type { ChatMessage } from '../../middleware/types.ts';
import { poolGatewaysPerTest } from '../helpers/pool-gateway.ts';
import { hashKeys } from '../../kvplanner/hash-keys.ts';

// nice 0: these tests check what the pool computes, not its priority; at nice 10 its threads get
// a tenth of a core beside the other test files' workers, and a 2-core machine timed them out.
const poolCfg = { min_chars: 0, max_queue: 8, max_per_tenant: 8, nice: 0, max_failures_per_tenant: 8 };
let pools: RenderPool[] = [];
afterEach(async () => {
  await Promise.all(pools.map((p) => p.close()));
  pools = [];
});

function text(n: number, seed: number): string {
  const words = ['def ', 'return x', ' = 1;\n', 'src/app.py:12 ', '{"k": [1, 2]} ', 'αβγ ', 'naïve ', '\t\tif ok:\n'];
  let s = '';
  for (let i = seed; s.length < n; i = (i * 31 + 7) % 9973) s += words[i % words.length];
  return s;
}

describe('render pool', () => {
  it('a pooled call equals the inline one: ids, block hashes, diagnostics, receipts, body', async () => {
    const pool = createRenderPool({ threads: 2, ...poolCfg })!;
    pools.push(pool);
    let pooled = 0;
    const counting: RenderOffload = {
      minChars: 0,
      run: (job, meta) => {
        pooled++;
        return pool.run(job, meta);
      },
    };
    const mk = (offload?: RenderOffload) =>
      createPipeline({ model: 'm', tokenizer: 'qwen3', layout: 'ctxgate', offload });
    const inline = mk();
    const offl = mk(counting);
    const messages: ChatMessage[] = [
      { role: 'system', content: `You are a coding agent. ${text(3000, 1)}` },
      { role: 'user', content: 'Fix the failing test.' },
    ];
    const calls: ChatMessage[][] = [];
    for (let i = 0; i < 4; i++) {
      calls.push(messages.slice());
      messages.push(
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: `c${i}`, type: 'function', function: { name: 'bash', arguments: `{"cmd":"cat f${i}.py"}` } },
          ],
        },
        { role: 'tool', tool_call_id: `c${i}`, content: text(20_000 + i * 777, i + 2) },
      );
    }
    for (const [session, salt] of [
      ['s1', 'salt-a'],
      ['s2', undefined],
    ] as const) {
      for (const msgs of calls) {
        const ctx = { tenant: 't', requestId: 'r', headers: { 'x-session-id': session }, model: 'm', cacheSalt: salt };
        const a = await inline.process({ model: 'm', messages: msgs }, ctx);
        const b = await offl.process({ model: 'm', messages: msgs }, ctx);
        expect(b.promptTokenIds).toEqual(a.promptTokenIds);
        expect(b.blockHashes).toEqual(a.blockHashes);
        // the routing keys: of the hashes, on the pool path (the previous call's copied) as inline
        expect(a.blockKeys).toEqual(hashKeys(a.blockHashes!));
        expect(b.blockKeys).toEqual(a.blockKeys);
        expect(b.prefix).toEqual(a.prefix);
        expect(b.receipts).toEqual(a.receipts);
        expect(b.body).toEqual(a.body);
        expect(a.promptTokenIds!.length).toBeGreaterThan(1000);
      }
    }
    expect(pooled).toBe(8);
  });

  it('sends a call to the pool by its new characters: appends stay inline, an edit at the top of a long history does not', async () => {
    const pool = createRenderPool({ threads: 1, ...poolCfg })!;
    pools.push(pool);
    const seen: number[] = [];
    const counting: RenderOffload = {
      minChars: 16_384,
      run: (job, meta) => {
        seen.push(job.input.messages.length);
        return pool.run(job, meta);
      },
    };
    const p = createPipeline({ model: 'm', tokenizer: 'qwen3', layout: 'ctxgate', offload: counting });
    const inline = createPipeline({ model: 'm', tokenizer: 'qwen3', layout: 'ctxgate' });
    const ctx = { tenant: 't', requestId: 'r', headers: { 'x-session-id': 'edit' }, model: 'm' };
    const history: ChatMessage[] = [
      { role: 'system', content: 'You are a coding agent.' },
      { role: 'user', content: `Read this log:\n${text(40_000, 9)}` },
      { role: 'assistant', content: 'Read it.' },
    ];
    const calls = [
      [...history, { role: 'user', content: 'What failed?' }], // big first call: pool
      [
        ...history,
        { role: 'user', content: 'What failed?' },
        { role: 'assistant', content: 'x' },
        { role: 'user', content: 'Why?' },
      ], // append: inline
      [
        history[0],
        { role: 'user', content: `Read this log:\n${text(40_000, 10)}` },
        ...history.slice(2),
        { role: 'user', content: 'Now?' },
      ], // top edited: pool
    ];
    for (const messages of calls) {
      const a = await p.process({ model: 'm', messages }, ctx);
      const b = await inline.process({ model: 'm', messages }, ctx);
      expect(a.promptTokenIds).toEqual(b.promptTokenIds);
      expect(a.prefix).toEqual(b.prefix);
    }
    expect(seen).toEqual([4, 4]);
  });

  it('serves tenants in turn: a burst of one tenant waits behind itself', () => {
    const q = new FairTaskQueue();
    const task = (tenant: string, id: string) =>
      ({ id, [Piscina.queueOptionsSymbol]: { tenant } }) as unknown as PiscinaTask;
    for (const id of ['a1', 'a2', 'a3']) q.push(task('a', id));
    q.push(task('b', 'b1'));
    const c1 = task('c', 'c1');
    q.push(c1);
    q.remove(c1);
    const order: string[] = [];
    for (let t = q.shift(); t; t = q.shift()) order.push((t as unknown as { id: string }).id);
    expect(order).toEqual(['a1', 'b1', 'a2', 'a3']);
    expect(q.size).toBe(0);
  });

  it('bounds: a tenant over max_per_tenant gets 429, a full queue 503, a closed pool refuses', async () => {
    const pool = createRenderPool({
      threads: 1,
      min_chars: 0,
      max_queue: 1,
      max_per_tenant: 2,
      nice: 0,
      max_failures_per_tenant: 8,
    })!;
    pools.push(pool);
    const p = createPipeline({ model: 'm', tokenizer: 'qwen3', offload: pool });
    const call = (tenant: string, i: number) =>
      p.process(
        { model: 'm', messages: [{ role: 'user', content: text(60_000, i) }] },
        { tenant, requestId: `r${i}`, headers: {}, model: 'm' },
      );
    const results = await Promise.allSettled([call('a', 1), call('a', 2), call('a', 3), call('b', 4), call('c', 5)]);
    const codes = results.map((r) => (r.status === 'rejected' ? (r.reason as { code: string }).code : 'ok'));
    // a1 runs, a2 waits (the queue's one slot), a3 is over a's cap, b and c find the queue full.
    expect(codes).toEqual(['ok', 'ok', 'tenant_render_queue_full', 'render_queue_full', 'render_queue_full']);
    expect((results[2] as PromiseRejectedResult).reason).toMatchObject({
      status: 429,
      headers: { 'retry-after': '1' },
    });
    expect((results[3] as PromiseRejectedResult).reason).toMatchObject({ status: 503 });
    expect(pool.pending()).toBe(0);
    await pool.close();
    await expect(call('a', 6)).rejects.toMatchObject({ code: 'shutting_down' });
  });
});

describe('render pool behind the gateway (real sockets)', () => {
  const gateways = poolGatewaysPerTest();

  it('answers /health while a 400k-character prompt is tokenised (before its pipeline ends)', async () => {
    const order: string[] = [];
    // Called as soon as the pipeline is done with the big call: inline, that is before the event
    // loop can look at the /health request that arrived meanwhile.
    const tap = () => void order.push('pipeline');
    const { up, gw } = await gateways.start({ renderPool: { threads: 1 }, assemble: { tap } });
    expect(gw.assembled.renderPool?.threads).toBe(1);
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'none', maxRetries: 0, timeout: 170_000 });
    const big = client.chat.completions
      .create({ model: 'm', max_tokens: 4, messages: [{ role: 'user', content: text(400_000, 5) }] })
      .then((r) => {
        order.push('big');
        return r;
      });
    // once the big call is on the pool's thread (not after a fixed time: it may not have arrived yet)
    const pool = gw.assembled.renderPool!;
    for (const end = Date.now() + 60_000; pool.pending() === 0 && order.length === 0 && Date.now() < end; )
      await new Promise((r) => setTimeout(r, 5));
    expect(order).toEqual([]);
    const health = await fetch(`${gw.url}/health`);
    order.push(`health:${health.status}`);
    const done = await big;
    expect(done.choices.length).toBe(1);
    expect(order).toEqual(['health:200', 'pipeline', 'big']);
    expect(up.requests.length).toBe(1);
  });
});
