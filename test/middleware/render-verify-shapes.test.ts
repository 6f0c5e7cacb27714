// The incremental render's safety net (tokens/incremental-render.ts): besides the 1-in-VERIFY_EVERY
// sample, the first VERIFY_FIRST_PER_KIND calls of each shape templates carry state across (a new
// user turn, a note right after an assistant turn, reasoning) are checked by a full render. The
// template here numbers user turns across the whole conversation, which a window that no longer
// holds the first user turn cannot see, while every prefix check passes: only a full-render check
// finds it. Before the per-shape checks such calls went out wrong until the sample happened to
// meet one (the pattern of a Qwen3 window fault that hit a fifth of some sessions' calls).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { segment } from '../../middleware/layout/segmentation.ts';
import { ChatRenderer } from '../../middleware/tokens/handle.ts';
import { renderPrompt, shapeOf, type RenderMemo } from '../../middleware/tokens/incremental-render.ts';
import { loadTokenizer } from '../../middleware/tokens/registry.ts';
import { toolsKey } from '../../middleware/tokens/tools-key.ts';
import type { ChatMessage } from '../../middleware/types.ts';

describe('incremental render: checked on the first calls of each shape', () => {
  it('shapeOf: new user turn, note after an assistant turn, reasoning', () => {
    const a: ChatMessage = { role: 'assistant', content: 'x' };
    const u: ChatMessage = { role: 'user', content: 'q' };
    const t: ChatMessage = { role: 'tool', content: 'o' };
    const note: ChatMessage = { role: 'system', content: 'note' };
    expect(shapeOf([u, a, t], 1, 3)).toBe(0);
    expect(shapeOf([u, a, u], 1, 3)).toBe(1);
    // a user turn that is only before p is old; the trailing note is not stable
    expect(shapeOf([u, a, note], 1, 2)).toBe(2);
    expect(shapeOf([u, t, note], 1, 2)).toBe(0);
    expect(shapeOf([u, { ...a, reasoning_content: 'hm' }], 1, 2)).toBe(4);
    expect(shapeOf([u, { ...a, reasoning_content: '' }], 1, 2)).toBe(0);
    expect(shapeOf([u, { role: 'assistant', content: '<think>\nhm\n</think>\nx' }, u], 1, 3)).toBe(5);
    expect(shapeOf([u, { ...a, reasoning: 'hm' } as ChatMessage, note], 1, 2)).toBe(6);
  });

  it('a window fault confined to new user turns is caught on its first call, not at the sample', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ctxgate-shapes-'));
    try {
      const file = join(dir, 'count-users.jinja');
      writeFileSync(
        file,
        "{%- set ns = namespace(u=0) -%}{%- for m in messages -%}{%- if m['role'] == 'user' -%}" +
          "{%- set ns.u = ns.u + 1 -%}[user #{{ ns.u }}]{{ m['content'] }}" +
          "{%- else -%}[{{ m['role'] }}]{{ m['content'] }}{%- endif -%}{%- endfor -%}" +
          '{%- if add_generation_prompt -%}[gen]{%- endif -%}',
      );
      const tok = await loadTokenizer('o200k_base', { chatTemplateFile: file });
      const interpreter = new ChatRenderer(tok.templateSource, undefined, tok.eosToken);
      const o = { tools: undefined, extra: undefined, contextKey: toolsKey(undefined, undefined).contextKey };
      const history: ChatMessage[] = [{ role: 'user', content: 'fix it' }];
      let memo: RenderMemo | undefined;
      const modes: string[] = [];
      // 30 calls: tool steps, a new user query every 10th; the window never holds the first user turn
      for (let i = 1; i <= 30; i++) {
        if (i % 10 === 0)
          history.push({ role: 'assistant', content: `answer ${i}` }, { role: 'user', content: `more ${i}` });
        else history.push({ role: 'assistant', content: `step ${i}` }, { role: 'tool', content: `out ${i}` });
        const r = renderPrompt(tok, history, segment(history).messageHashes, 0, history.length, o, memo);
        expect(r.text, `call ${i}`).toBe(interpreter.interpret(history, { addGenerationPrompt: true }));
        expect(r.memo.textNoGen, `call ${i}`).toBe(interpreter.interpret(history, { addGenerationPrompt: false }));
        modes.push(r.mode);
        memo = r.memo;
      }
      // the shortcut ran (incremental calls before the first query), then the check at call 10 found
      // the fault and turned it off for this template: full renders from there
      expect(modes.slice(1, 9)).toContain('incremental');
      expect(modes[9]).toBe('full');
      expect(modes.slice(10).every((m) => m === 'full')).toBe(true);
    } finally {
      rmSync(dir, { recursive: true });
    }
  });
});
