import { describe, expect, it } from 'vitest';
import { createPipeline } from '../../middleware/pipeline.ts';
import { loadTokenizer } from '../../middleware/tokens/registry.ts';
import type { ChatMessage, ChatRequest, PipelineContext, ToolDef } from '../../middleware/types.ts';

const ctx = (i: number, headers: Record<string, string> = {}): PipelineContext => ({
  tenant: 't1',
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
      parameters: {
        type: 'object',
        properties: { cmd: { type: 'string' }, timeout: { type: 'integer' } },
        required: ['cmd'],
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'read',
      description: 'read a file',
      parameters: { type: 'object', properties: { path: { type: 'string' } } },
    },
  },
];

function agentCalls(
  n: number,
  sys: (i: number) => string,
  toolsFor: (i: number) => ToolDef[] = () => tools,
): ChatRequest[] {
  const history: ChatMessage[] = [{ role: 'user', content: 'Fix the failing test in repo X.' }];
  const calls: ChatRequest[] = [];
  for (let i = 0; i < n; i++) {
    calls.push({
      model: 'm',
      messages: [{ role: 'system', content: sys(i) }, ...structuredClone(history)],
      tools: toolsFor(i),
    });
    history.push({
      role: 'assistant',
      content: `step ${i}`,
      tool_calls: [
        { id: `c${i}`, type: 'function', function: { name: 'bash', arguments: `{"cmd":"ls ${i}","timeout":5}` } },
      ],
    });
    history.push({ role: 'tool', tool_call_id: `c${i}`, content: `output of call ${i}\n`.repeat(20) });
  }
  return calls;
}

const clockSys = (i: number) =>
  `Current date: 2026-11-30T03:${String(10 + i).padStart(2, '0')}:00Z\nYou are a coding agent. Be precise.\nAlways run the tests.`;

describe('pipeline', () => {
  it('volatile clock: ctxgate keeps the prefix cached where passthrough breaks at the system prompt', async () => {
    const calls = agentCalls(6, clockSys);
    const cg = createPipeline({ model: 'm', tokenizer: 'qwen3' });
    const pt = createPipeline({ model: 'm', tokenizer: 'qwen3', layout: 'passthrough' });
    let prevTokens = 0;
    for (let i = 0; i < calls.length; i++) {
      const a = await cg.process(calls[i], ctx(i));
      const before = prevTokens;
      prevTokens = a.prefix!.prompt_tokens;
      const b = await pt.process(calls[i], ctx(i));
      expect(a.sessionId).toBe(b.sessionId);
      expect(b.body).toBe(calls[i]);
      if (i === 0) {
        // The first call passes unchanged: nothing is guessed volatile on first sight.
        expect(a.prefix?.break_cause).toBe('new_session');
        expect(a.body).toBe(calls[0]);
        continue;
      }
      expect(b.prefix?.break_cause).toBe('system_changed');
      expect(b.prefix?.predicted_cached_tokens).toBeLessThan(32);
      // Call 2 is where the clock line is seen changing: one break, then cached call after call.
      expect(a.prefix?.break_cause).toBe(i === 1 ? 'system_changed' : 'none');
      // Everything of the previous prompt but its leaf note (and the partial last block) is reused.
      if (i > 1) expect(a.prefix!.predicted_cached_tokens).toBeGreaterThan(before - 64);
      const sys = a.body.messages[0].content as string;
      expect(sys).not.toContain('Current date');
      const last = a.body.messages[a.body.messages.length - 1];
      expect(last.role).toBe('system');
      expect(last.content).toContain(`Current date: 2026-11-30T03:${String(10 + i).padStart(2, '0')}:00Z`);
      expect(a.receipts.some((r) => r.stage === 'volatile' && r.action === 'relocate')).toBe(true);
      const tok = await loadTokenizer('qwen3');
      // Engine-exact: the ids are the whole-text encoding of the template rendering.
      expect(Array.from(a.promptTokenIds!)).toEqual(
        tok.encode(tok.renderChat(a.body.messages, { tools: a.body.tools })),
      );
      expect(a.blockHashes!.length).toBe(Math.floor(a.promptTokenIds!.length / 16));
    }
  });

  it('tool shuffle: tools and keys are put back into first-seen order, byte-identically', async () => {
    const shuffled = (i: number): ToolDef[] => {
      const t = structuredClone(tools);
      if (i % 2) t.reverse();
      if (i % 3 === 1) t[0] = { function: t[0].function, type: t[0].type };
      return t;
    };
    const calls = agentCalls(5, () => 'You are a coding agent.', shuffled);
    const cg = createPipeline({ model: 'm', tokenizer: 'llama3_1' });
    let firstTools: string | undefined;
    for (let i = 0; i < calls.length; i++) {
      const r = await cg.process(calls[i], ctx(i));
      firstTools ??= JSON.stringify(r.body.tools);
      expect(JSON.stringify(r.body.tools)).toBe(firstTools);
      if (i > 0) expect(r.prefix?.break_cause).toBe('none');
    }
  });

  it('append-only traffic is passed byte-stable and the session id comes from the header first', async () => {
    const calls = agentCalls(4, () => 'You are a coding agent.');
    const cg = createPipeline({ model: 'm', tokenizer: 'deepseek_v3' });
    for (let i = 0; i < calls.length; i++) {
      const r = await cg.process(calls[i], ctx(i, { 'x-session-id': 'sess-A' }));
      expect(r.sessionId).toBe('sess-A');
      expect(JSON.stringify(r.body)).toBe(JSON.stringify(calls[i]));
      expect(r.receipts).toEqual([]);
    }
  });

  it('qwen3 reasoning turns: explain names the template re-render', async () => {
    const cg = createPipeline({ model: 'm', tokenizer: 'qwen3' });
    const m1: ChatMessage[] = [
      { role: 'system', content: 'sys' },
      { role: 'user', content: 'q1' },
    ];
    await cg.process({ model: 'm', messages: m1 }, ctx(1));
    const m2 = [
      ...m1,
      { role: 'assistant', content: 'a1', reasoning_content: 'long thinking here' },
      { role: 'tool', tool_call_id: 'x', content: 'out' },
    ];
    const r2 = await cg.process({ model: 'm', messages: m2 }, ctx(2));
    expect(r2.prefix?.break_cause).toBe('none');
    const m3 = [...m2, { role: 'assistant', content: 'a2' }, { role: 'user', content: 'q2' }];
    const r3 = await cg.process({ model: 'm', messages: m3 }, ctx(3));
    expect(r3.prefix?.break_cause).toBe('template_rerender');
    expect(r3.prefix?.break_message_index).toBe(2);
    const m4 = [{ role: 'system', content: 'sys' }, { role: 'user', content: 'q1 edited' }, ...m3.slice(2)];
    const r4 = await cg.process({ model: 'm', messages: m4 }, ctx(4, {}));
    expect(r4.prefix?.break_cause === 'history_edited' || r4.prefix?.break_cause === 'new_session').toBe(true);
  });
});
