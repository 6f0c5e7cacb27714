// Derived session ids: one id per agent run (the first conversation to continue call 1 claims
// its id); a parallel agent on the same task (same system prompt, same task, another first
// reply) forks to its own session from call 2 on, seeded with call 1's state.
import { afterAll, describe, expect, inject, it } from 'vitest';
import { identifySession } from '../../middleware/layout/session-id.ts';
import { LEDGER_SLOT } from '../../middleware/ledger/types.ts';
import { createPipeline } from '../../middleware/pipeline.ts';
import { MemorySessionStore } from '../../middleware/session/memory-store.ts';
import { RedisSessionStore } from '../../middleware/session/redis-store.ts';
import type { SessionStore } from '../../middleware/session/store.ts';
import { readSlot } from '../../middleware/session/stage-state.ts';
import type { ChatMessage, ChatRequest, PipelineContext, PipelineResult, ToolDef } from '../../middleware/types.ts';
import { buildSession, codeLines, requestsOf, type Step } from './helpers/session-gen.ts';

const ctx = (i: number, tenant = 't1', headers: Record<string, string> = {}): PipelineContext => ({
  tenant,
  requestId: `r${i}`,
  headers,
  model: 'm',
});
const tools: ToolDef[] = [
  {
    type: 'function',
    function: {
      name: 'bash',
      description: 'run',
      parameters: { type: 'object', properties: { command: { type: 'string' } } },
    },
  },
];
const TASK = 'Fix the bug in src/app.py. Do not modify tests.';

/** One agent's calls: reads only (nothing the stabiliser rewrites), a clock line in the system prompt. */
function agent(tag: string, files: string[]): ChatRequest[] {
  const steps: Step[] = files.map((f, k) => ({
    thought: `THOUGHT (${tag}): step ${k + 1}, reading ${f}.`,
    cmd: `sed -n '1,40p' ${f}`,
    out: codeLines(`${tag}_${k}`, 40),
  }));
  return requestsOf(buildSession(TASK, steps)).map((messages, i) => ({
    model: 'm',
    tools,
    messages: messages.map((m, j) =>
      j === 0
        ? {
            ...m,
            content: `${m.content as string}\nCurrent date: 2026-11-30T03:${String(10 + i).padStart(2, '0')}:00Z`,
          }
        : m,
    ),
  }));
}

const pipeline = (store: SessionStore = new MemorySessionStore()) =>
  createPipeline({ model: 'm', tokenizer: 'qwen3', store });

const A = agent('a', ['src/app.py', 'src/util.py', 'tests/test_app.py', 'src/app.py', 'setup.py']);
const B = agent('b', ['tests/test_app.py', 'src/app.py', 'README.md', 'src/models/user.py', 'src/util.py']);

describe('derived session ids: one per run, a parallel run on the same task forks', () => {
  it('two interleaved agents with the same system prompt and task: own ids, own diagnostics, as if each ran alone', async () => {
    const solo = async (calls: ChatRequest[]): Promise<PipelineResult[]> => {
      const p = pipeline();
      const out: PipelineResult[] = [];
      for (const [i, c] of calls.entries()) out.push(await p.process(c, ctx(i)));
      return out;
    };
    const soloA = await solo(A);
    const soloB = await solo(B);
    const shared = pipeline();
    const ra: PipelineResult[] = [];
    const rb: PipelineResult[] = [];
    for (let i = 0; i < A.length; i++) {
      ra.push(await shared.process(A[i], ctx(i)));
      rb.push(await shared.process(B[i], ctx(i)));
    }
    // Call 1 is the same prompt for both: one session, and the second sender hits the first's cache.
    expect(ra[0].sessionId).toBe(rb[0].sessionId);
    expect(ra[0].prefix?.break_cause).toBe('new_session');
    expect(rb[0].prefix?.break_cause).toBe('none');
    // Alone, each run is one session; interleaved, A (first to continue call 1) keeps its id and
    // B forks at its first turn.
    expect(new Set(soloA.map((r) => r.sessionId)).size).toBe(1);
    expect(new Set(soloB.map((r) => r.sessionId)).size).toBe(1);
    for (let i = 1; i < A.length; i++) {
      expect(ra[i].sessionId).toMatch(/^s_[0-9a-f]{32}$/);
      expect(ra[i].sessionId).not.toBe(rb[i].sessionId);
      expect(ra[i].sessionId).toBe(ra[0].sessionId);
      expect(rb[i].sessionId).not.toBe(rb[0].sessionId);
      expect(rb[i].sessionId).toBe(rb[1].sessionId);
      for (const [mine, alone, prev] of [
        [ra[i], soloA[i], ra[i - 1]],
        [rb[i], soloB[i], rb[i - 1]],
      ] as const) {
        // Not `history_edited` from the other agent, not `new_session` on call 2: call 2 breaks
        // once where the clock line was seen changing, as it would alone.
        expect(mine.prefix?.break_cause).toBe(i === 1 ? 'system_changed' : 'none');
        expect(mine.prefix?.predicted_cached_tokens).toBe(alone.prefix?.predicted_cached_tokens);
        if (i > 1) expect(mine.prefix!.predicted_cached_tokens).toBeGreaterThan(prev.prefix!.prompt_tokens - 64);
        expect(JSON.stringify(mine.body)).toBe(JSON.stringify(alone.body));
        expect(mine.receipts).toEqual(alone.receipts);
      }
    }
    // The solo runs agree: call 2 of a single session continues call 1.
    expect(soloA[1].prefix?.break_cause).toBe('system_changed');
    expect(soloA[2].prefix?.break_cause).toBe('none');
    expect(soloA[1].sessionId).toBe(ra[1].sessionId);
  });

  it('the fork carries call 1 into its own state; a later call 1 never rewinds the claimed session', async () => {
    const store = new MemorySessionStore();
    const p = pipeline(store);
    const r1 = await p.process(A[0], ctx(0));
    await p.process(B[0], ctx(0));
    const r2a = await p.process(A[1], ctx(1));
    const r2b = await p.process(B[1], ctx(1));
    expect(r2a.sessionId).toBe(r1.sessionId);
    const claimed = (await store.get('t1', r1.sessionId))!;
    const forkB = (await store.get('t1', r2b.sessionId))!;
    expect(claimed.calls).toBe(3);
    expect(forkB.calls).toBe(3);
    expect(JSON.stringify(readSlot(claimed, LEDGER_SLOT))).not.toBe(JSON.stringify(readSlot(forkB, LEDGER_SLOT)));
    // A third run starting the same task: call 1 leaves A's state alone, and its call 2 forks
    // from a call-1 seed (a system_changed break where the clock moved, not a new session).
    const C = agent('c', ['setup.py', 'src/app.py']);
    const before = JSON.stringify(readSlot((await store.get('t1', r1.sessionId))!, LEDGER_SLOT));
    const c0 = await p.process(C[0], ctx(2));
    expect(c0.sessionId).toBe(r1.sessionId);
    expect(JSON.stringify(readSlot((await store.get('t1', r1.sessionId))!, LEDGER_SLOT))).toBe(before);
    const c1 = await p.process(C[1], ctx(3));
    expect(c1.sessionId).not.toBe(r1.sessionId);
    expect(c1.prefix?.break_cause).toBe('system_changed');
    expect((await p.process(A[2], ctx(4))).prefix?.break_cause).toBe('none');
  });

  it('explicit ids are never forked', async () => {
    const p = pipeline();
    for (let i = 0; i < A.length; i++) {
      for (const c of [A[i], B[i]]) {
        expect((await p.process(c, ctx(i, 't1', { 'x-session-id': 'hdr' }))).sessionId).toBe('hdr');
        expect((await p.process({ ...c, prompt_cache_key: 'pck' }, ctx(i))).sessionId).toBe('pck');
        expect((await p.process({ ...c, user: 'u1' }, ctx(i))).sessionId).toBe('u1');
      }
    }
  });

  it('the id stays put across resends that strip reasoning, renumber calls, re-serialise arguments or move the clock', () => {
    const base = A[3];
    const id = identifySession(base, ctx(0)).id;
    const first = base.messages.findIndex((m) => m.role === 'assistant');
    const edit = (f: (m: ChatMessage) => ChatMessage): ChatRequest => ({
      ...base,
      messages: base.messages.map((m, j) => (j === first ? f(structuredClone(m)) : m)),
    });
    const variants: ChatRequest[] = [
      edit((m) => ({ ...m, reasoning_content: 'I should read app.py first.' })),
      edit((m) => ({ ...m, content: `<think>plan the reads</think>\n${m.content as string}\n` })),
      edit((m) => ({ ...m, content: `plan the reads</think>${m.content as string}` })),
      edit((m) => ({
        ...m,
        tool_calls: m.tool_calls!.map((c) => ({
          ...c,
          id: 'renumbered',
          function: { ...c.function, arguments: JSON.stringify(JSON.parse(c.function.arguments), null, 2) },
        })),
      })),
      {
        ...base,
        messages: [
          { ...base.messages[0], content: (base.messages[0].content as string).replace(/T03:\d\d/, 'T09:59') },
          ...base.messages.slice(1),
        ],
      },
      A[4],
    ];
    for (const v of variants) expect(identifySession(v, ctx(0)).id).toBe(id);
    expect(identifySession(A[1], ctx(0)).parent).toBe(identifySession(A[0], ctx(0)).id);
    // What does fork it: another first reply, another tenant, another task.
    expect(
      identifySession(
        edit((m) => ({ ...m, content: 'THOUGHT: something else' })),
        ctx(0),
      ).id,
    ).not.toBe(id);
    expect(identifySession(base, ctx(0, 't2')).id).not.toBe(id);
    expect(
      identifySession(
        { ...base, messages: base.messages.map((m, j) => (j === 1 ? { ...m, content: 'Another task.' } : m)) },
        ctx(0),
      ).id,
    ).not.toBe(id);
    // An assistant prefill ending the request is not a turn yet.
    const prefill = { ...A[0], messages: [...A[0].messages, { role: 'assistant', content: 'THOUGHT:' }] };
    expect(identifySession(prefill, ctx(0)).id).toBe(identifySession(A[0], ctx(0)).id);
    expect(identifySession(prefill, ctx(0)).parent).toBeUndefined();
  });

  it('no seed when the parent state led with other messages, or there is none', async () => {
    const p = pipeline();
    const hinted: ChatRequest = {
      ...A[0],
      messages: [...A[0].messages, { role: 'user', content: 'Hint: look at util.py.' }],
    };
    const r0 = await p.process(hinted, ctx(0));
    expect(identifySession(A[1], ctx(0)).parent).toBe(r0.sessionId);
    expect((await p.process(A[1], ctx(1))).prefix?.break_cause).toBe('new_session');
    expect((await pipeline().process(B[2], ctx(2))).prefix?.break_cause).toBe('new_session');
  });
});

describe('fork seeding through a shared Redis store', () => {
  const stores: RedisSessionStore[] = [];
  afterAll(async () => {
    for (const s of stores) await s.close();
  });

  it('call 1 on one replica, call 2 on another: one session; a parallel run forks seeded from Redis', async () => {
    const url = inject('redisUrl');
    const open = () => {
      const s = new RedisSessionStore({ url, ttlSeconds: 120, commandTimeoutMs: 5000 });
      stores.push(s);
      return s;
    };
    const tenant = `fork-${process.pid}-${Date.now()}`;
    const replica1 = pipeline(open());
    const replica2 = pipeline(open());
    const r1 = await replica1.process(A[0], ctx(0, tenant));
    const r2 = await replica2.process(A[1], ctx(1, tenant));
    expect(r2.sessionId).toBe(r1.sessionId);
    // The same session: the clock line's first change breaks at the system prompt, not as a new session.
    expect(r2.prefix?.break_cause).toBe('system_changed');
    const r3 = await replica1.process(A[2], ctx(2, tenant));
    expect(r3.sessionId).toBe(r1.sessionId);
    expect(r3.prefix?.break_cause).toBe('none');
    expect(r3.prefix!.predicted_cached_tokens).toBeGreaterThan(0);
    // B on the other replica, same task, another first reply: forks, seeded with call 1's state.
    const b1 = await replica2.process(B[1], ctx(1, tenant));
    expect(b1.sessionId).not.toBe(r1.sessionId);
    expect(b1.prefix?.break_cause).toBe('system_changed');
    expect((await replica1.process(B[2], ctx(2, tenant))).sessionId).toBe(b1.sessionId);
    const check = open();
    expect((await check.get(tenant, r1.sessionId))?.calls).toBe(3);
    expect((await check.get(tenant, b1.sessionId))?.calls).toBe(3);
  });
});
