// Counting big texts on the render pool (middleware/perf/count-offload.ts, the pool's `count`
// jobs): a thread's counts are the main thread's; a pipeline that counts its big tool outputs
// there gives the inline pipeline's bodies, receipts and stored state; over real sockets /health
// answers while one tenant's 1M-character tool output is being counted (an ordering, not a timing,
// claim); a count job whose thread dies ends in the render pool's 422 in the caller's shape.
import OpenAI from 'openai';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createRenderPool, type RenderPool } from '../../gateway/workers-pool/pool.ts';
import { type CountJob, OFFLOAD_COUNT_MIN_CHARS } from '../../middleware/perf/count-offload.ts';
import { createPipeline } from '../../middleware/pipeline.ts';
import { MemorySessionStore } from '../../middleware/session/memory-store.ts';
import { peekEncoded } from '../../middleware/tokens/encode-cache.ts';
import { loadTokenizer } from '../../middleware/tokens/registry.ts';
import type { ChatMessage } from '../../middleware/types.ts';
import { poolGatewaysPerTest } from '../helpers/pool-gateway.ts';

// nice 0: these tests check what the pool computes, not its priority (see render-pool.test.ts).
const poolCfg = { min_chars: 16_384, max_queue: 8, max_per_tenant: 8, nice: 0, max_failures_per_tenant: 8 };
const DYING = new URL('../fixtures/render-pool/dying-thread.mjs', import.meta.url).href;

let pools: RenderPool[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  await Promise.all(pools.map((p) => p.close()));
  pools = [];
});

/** Fresh code-like text: `seed` makes it differ from every other call's (no cache hits). */
function text(n: number, seed: number): string {
  const words = ['def ', 'return x', ' = 1;\n', 'src/app.py:12 ', '{"k": [1, 2]} ', 'αβγ ', 'naïve ', '\t\tif ok:\n'];
  let s = '';
  for (let i = seed; s.length < n; i = (i * 31 + 7) % 9973) s += words[i % words.length] + (i % 5 === 0 ? i : '');
  return s.slice(0, n);
}

/** A tool call and its output. */
function step(id: string, command: string, output: string): ChatMessage[] {
  return [
    {
      role: 'assistant',
      content: null,
      tool_calls: [{ id, type: 'function', function: { name: 'bash', arguments: JSON.stringify({ command }) } }],
    },
    { role: 'tool', tool_call_id: id, content: output },
  ];
}

/** The pool with its count jobs counted (the texts each carried). */
function spied(p: RenderPool): { pool: RenderPool; jobs: CountJob[] } {
  const jobs: CountJob[] = [];
  const count = p.count.bind(p);
  p.count = (job, meta) => {
    jobs.push(job);
    return count(job, meta);
  };
  return { pool: p, jobs };
}

describe('count jobs on the render pool', () => {
  it("a thread's counts are the main thread's encodeCached lengths", async () => {
    const pool = createRenderPool({ threads: 1, ...poolCfg })!;
    pools.push(pool);
    const tok = await loadTokenizer('qwen3');
    const texts = [text(300_000, 3), '', 'x', text(40_000, 4), '   \n\n\t', text(70_000, 5)];
    const r = await pool.count({ tokenizer: 'qwen3', texts }, { tenant: 't', affinity: 's' });
    expect(r.tokens).toEqual(texts.map((t) => tok.encodeCached(t).length));
    expect(r.tokens[0]).toBeGreaterThan(50_000);
  }, 120_000);

  it.each([
    ['no budget', undefined],
    ['budget M* 30,000 (compaction counts the history too)', 30_000],
  ])(
    'a pipeline counting big outputs on the pool equals the inline one: body, receipts, ids, stored state (%s)',
    async (_, budgetTokens) => {
      const { pool, jobs } = spied(createRenderPool({ threads: 1, ...poolCfg })!);
      pools.push(pool);
      // Both pipelines' ledgers and stores read one clock (the state carries times).
      vi.spyOn(Date, 'now').mockReturnValue(1_764_590_000_000);
      const mk = (offload?: RenderPool) => {
        const store = new MemorySessionStore();
        return {
          store,
          p: createPipeline({ model: 'm', tokenizer: 'qwen3', layout: 'ctxgate', offload, store, budgetTokens }),
        };
      };
      const inline = mk();
      const offl = mk(pool);
      const msgs: ChatMessage[] = [
        { role: 'system', content: 'You are a coding agent.' },
        { role: 'user', content: 'Fix the failing test.' },
      ];
      // The first call: one big output and small ones; then reads of big files and writes of them
      // (the writes make tombstones of earlier reads, from counts taken on the pool).
      msgs.push(...step('c0', 'cat src/a.py', text(120_000, 10)), ...step('c1', 'ls', text(2_000, 11)));
      let k = 2;
      let tombstones = 0;
      let compactions = 0;
      for (let call = 0; call < 5; call++) {
        const ctx = { tenant: 't', requestId: `r${call}`, headers: { 'x-session-id': 's1' }, model: 'm' };
        const a = await inline.p.process({ model: 'm', messages: msgs.slice() }, ctx);
        const b = await offl.p.process({ model: 'm', messages: msgs.slice() }, ctx);
        await Promise.all([a.stored, b.stored]);
        expect(b.body).toEqual(a.body);
        expect(b.receipts).toEqual(a.receipts);
        tombstones += b.receipts.filter((r) => r.action === 'tombstone').length;
        compactions += b.receipts.filter((r) => r.stage === 'compaction' && r.action.startsWith('compacted')).length;
        expect(b.promptTokenIds).toEqual(a.promptTokenIds);
        expect(b.blockHashes).toEqual(a.blockHashes);
        expect(await offl.store.get('t', b.sessionId)).toEqual(await inline.store.get('t', a.sessionId));
        const f = `src/${'abc'[call % 3]}.py`;
        msgs.push(...step(`c${k++}`, `sed -i 's/x/y/' ${f}`, ''));
        msgs.push(...step(`c${k++}`, `cat ${f}`, text(OFFLOAD_COUNT_MIN_CHARS + call * 9_999, 20 + call)));
        msgs.push(...step(`c${k++}`, 'git diff', text(30_000, 40 + call)));
        msgs.push(...step(`c${k++}`, 'git status', text(5_000, 60 + call)));
      }
      expect(tombstones).toBeGreaterThan(0);
      if (budgetTokens) expect(compactions).toBeGreaterThan(0);
      // Every call sent its new big output to the pool, only the big ones, each once: a text counted
      // there is remembered (compaction's count of the history, the next calls' counts).
      expect(jobs.length).toBe(5);
      const sent = jobs.flatMap((j) => j.texts);
      expect(new Set(sent).size).toBe(sent.length);
      for (const t of sent) expect(t.length).toBeGreaterThanOrEqual(OFFLOAD_COUNT_MIN_CHARS);
    },
    180_000,
  );
  it("with a pool, a budgeted model's big new output is never BPE-encoded on the event loop", async () => {
    const pool = createRenderPool({ threads: 1, ...poolCfg })!;
    pools.push(pool);
    const p = createPipeline({
      model: 'm',
      tokenizer: 'qwen3',
      layout: 'ctxgate',
      offload: pool,
      budgetTokens: 30_000,
    });
    const big = text(200_000, 77);
    const msgs: ChatMessage[] = [
      { role: 'system', content: 'You are a coding agent.' },
      { role: 'user', content: 'Read it.' },
      ...step('c0', 'cat big.txt', big),
    ];
    for (let call = 0; call < 2; call++) {
      const r = await p.process(
        { model: 'm', messages: msgs.slice() },
        { tenant: 't', requestId: `r${call}`, headers: {}, model: 'm' },
      );
      await r.stored;
      msgs.push(...step(`d${call}`, 'ls', text(1_000, 80 + call)));
    }
    // Counted (ledger, compaction, both calls) and rendered on the thread only.
    expect(peekEncoded('qwen3', big)).toBeUndefined();
  }, 120_000);
});

describe('count jobs through the assembled gateway (real sockets)', () => {
  const gateways = poolGatewaysPerTest();

  // ChatMessage is the gateway's own (looser) shape of what the SDK sends.
  const bigCall = (output: string) =>
    [
      { role: 'system', content: 'You are a coding agent.' },
      { role: 'user', content: 'Read the log.' },
      ...step('c0', 'cat big.log', output),
    ] as OpenAI.ChatCompletionMessageParam[];

  it("answers /health while one tenant's 1M-character tool output is being counted", async () => {
    const order: string[] = [];
    const { up, gw } = await gateways.start({ renderPool: { threads: 1, nice: 0 } });
    const { pool, jobs } = spied(gw.assembled.renderPool!);
    const count = pool.count;
    pool.count = (job, meta) => {
      order.push('count');
      return count(job, meta).then((r) => {
        order.push('counted');
        return r;
      });
    };
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'none', maxRetries: 0, timeout: 170_000 });
    const big = client.chat.completions.create({ model: 'm', max_tokens: 4, messages: bigCall(text(1_000_000, 7)) });
    // once the count job is on the pool (not after a fixed time: the call may not have arrived yet)
    for (const end = Date.now() + 60_000; order.length === 0 && Date.now() < end; )
      await new Promise((r) => setTimeout(r, 2));
    const health = await fetch(`${gw.url}/health`);
    order.push(`health:${health.status}`);
    expect((await big).choices.length).toBe(1);
    expect(order).toEqual(['count', 'health:200', 'counted']);
    expect(jobs.length).toBe(1);
    expect(up.requests.length).toBe(1);
  }, 180_000);

  it('a count job whose thread dies twice ends in 422 render_failed; other calls go on', async () => {
    const { up, gw } = await gateways.start({ renderPool: { threads: 1, nice: 0 }, assemble: { renderThread: DYING } });
    const { jobs } = spied(gw.assembled.renderPool!);
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'none', maxRetries: 0, timeout: 170_000 });
    const err = await client.chat.completions
      .create({ model: 'm', max_tokens: 4, messages: bigCall(`${text(100_000, 8)} END-THIS-THREAD`) })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect((err as InstanceType<typeof OpenAI.APIError>).status).toBe(422);
    expect((err as InstanceType<typeof OpenAI.APIError>).code).toBe('render_failed');
    // It was the count job that failed: the call never got to render, nor upstream.
    expect(jobs.length).toBe(1);
    expect(gw.assembled.renderPool!.retries()).toBe(1);
    expect(up.requests.length).toBe(0);
    const ok = await client.chat.completions.create({ model: 'm', max_tokens: 4, messages: bigCall(text(100_000, 9)) });
    expect(ok.choices.length).toBe(1);
    expect(jobs.length).toBe(2);
    expect(up.requests.length).toBe(1);
  }, 180_000);
});
