// --chat-template: the default per tokenizer, and parity between the gateway's rendering (the
// pipeline's engine-exact prompt ids) and the reference worker's, with DeepSeek's tools template.
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { applyProfile } from '../../loadtest/profiles/index.ts';
import { chatTemplateFor, DEFAULT_CHAT_TEMPLATES } from '../../loadtest/replay/chat-template.ts';
import { loadWorkerTokenizer, type ChatMessage } from '../../loadtest/sim-worker/tokenize.ts';
import { generateSessions } from '../../loadtest/synth/index.ts';
import { createPipeline } from '../../middleware/pipeline.ts';

describe('bench replay --chat-template', () => {
  it('defaults deepseek_v3 to the tools template, others to their own; none and explicit files win', () => {
    const ds = chatTemplateFor('deepseek_v3', undefined);
    expect(ds).toMatch(/configs\/templates\/deepseek-v3-tools\.jinja$/);
    expect(existsSync(ds!)).toBe(true);
    expect(DEFAULT_CHAT_TEMPLATES.deepseek_v3).toBe('configs/templates/deepseek-v3-tools.jinja');
    expect(chatTemplateFor('qwen3', undefined)).toBeUndefined();
    expect(chatTemplateFor('deepseek_v3', 'none')).toBeUndefined();
    expect(chatTemplateFor('qwen3', 'configs/templates/chatml.jinja')).toMatch(/^\/.*chatml\.jinja$/);
    expect(() => chatTemplateFor('qwen3', 'no/such/template.jinja')).toThrow(/no such file/);
  });

  it('gateway pipeline and worker render tool-shuffled sessions to the same token ids (deepseek_v3 + tools template)', async () => {
    const tpl = chatTemplateFor('deepseek_v3', undefined)!;
    const sessions = applyProfile(
      generateSessions({ count: 2, seed: 5, minCalls: 5, maxCalls: 6, volatileEvery: 0, elisionEvery: 0 }),
      'tool-shuffle',
      { seed: 1 },
    );
    const worker = await loadWorkerTokenizer('deepseek_v3', tpl);
    const bundled = await loadWorkerTokenizer('deepseek_v3');
    let calls = 0;
    for (const layout of ['passthrough', 'ctxgate'] as const) {
      for (const s of sessions) {
        const p = createPipeline({
          model: 'm',
          tokenizer: 'deepseek_v3',
          chatTemplateFile: tpl,
          layout,
        });
        for (const [i, c] of s.calls.entries()) {
          const ctx = { tenant: 't', requestId: `${s.id}-${i}`, headers: {}, model: 'm' };
          const r = await p.process(structuredClone(c.body), ctx);
          const messages = r.body.messages as unknown as ChatMessage[];
          const ids = worker.encodeCached(worker.renderChat(messages, { tools: r.body.tools }));
          expect(Array.from(r.promptTokenIds!)).toEqual(ids);
          // the tools list is in the prompt (the bundled template drops it)
          const fn = (r.body.tools![0] as { function: { name: string } }).function.name;
          expect(worker.renderChat(messages, { tools: r.body.tools })).toContain(`### ${fn}`);
          expect(bundled.renderChat(messages, { tools: r.body.tools })).not.toContain(`### ${fn}`);
          p.observe?.(r, { status: 200 }, ctx);
          calls++;
        }
      }
    }
    expect(calls).toBeGreaterThanOrEqual(20);
  });
});
