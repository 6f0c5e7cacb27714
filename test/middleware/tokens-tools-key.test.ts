// toolsKey (tokens/tools-key.ts) gives, per tools array, exactly what the pipeline computed every
// call before it (the JSON, its short SHA-1, and the context key with the template variables), for
// any template variables in any order of calls; and the Qwen3 rendering given that JSON renders what
// the interpreter renders, the tool block remembered across calls as before.
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ChatRenderer } from '../../middleware/tokens/handle.ts';
import { renderQwen3 } from '../../middleware/tokens/qwen3-template.ts';
import { loadTokenizer } from '../../middleware/tokens/registry.ts';
import { toTemplateMessages } from '../../middleware/tokens/template-input.ts';
import { shortSha1, toolsKey } from '../../middleware/tokens/tools-key.ts';
import type { ToolDef } from '../../middleware/types.ts';

const sha1 = (s: string): string => createHash('sha1').update(s).digest('base64').slice(0, 16);

/** What the pipeline computed per call before toolsKey. */
function direct(tools: ToolDef[] | undefined, extra: Record<string, unknown> | undefined) {
  const json = JSON.stringify(tools ?? []);
  return { json, toolsHash: sha1(json), contextKey: sha1(json + '\u0000' + JSON.stringify(extra ?? {})) };
}

const tool = (name: string, extraKey?: string): ToolDef => ({
  type: 'function',
  function: {
    name,
    description: `runs ${name} "quoted" ünï ✓`,
    parameters: { type: 'object', properties: { [extraKey ?? 'x']: { type: 'string' } } },
  },
});

describe('toolsKey', () => {
  it('equals the JSON and hashes computed directly, whatever the sequence of arrays and variables', () => {
    expect(shortSha1('abc')).toBe(sha1('abc'));
    const a = [tool('bash'), tool('read')];
    const b = [tool('bash')];
    const c = [tool('bash'), tool('read')]; // equal JSON to a, another array
    const extras: (Record<string, unknown> | undefined)[] = [
      undefined,
      {},
      { enable_thinking: false },
      { enable_thinking: true },
      { enable_thinking: false },
      undefined,
    ];
    // Every (array, variables) pair, in an order that revisits each array with other variables.
    for (let round = 0; round < 3; round++)
      for (const extra of extras)
        for (const tools of [a, b, undefined, c, a]) {
          const k = toolsKey(tools, extra);
          expect({ json: k.json, toolsHash: k.toolsHash, contextKey: k.contextKey }).toEqual(direct(tools, extra));
        }
    // Different arrays and variables do give different keys (the comparison above can fail).
    expect(toolsKey(a, undefined).contextKey).not.toBe(toolsKey(b, undefined).contextKey);
    expect(toolsKey(a, { enable_thinking: true }).contextKey).not.toBe(toolsKey(a, undefined).contextKey);
    expect(toolsKey(a, undefined).toolsHash).toBe(toolsKey(c, { enable_thinking: true }).toolsHash);
  });

  it('a key already returned is not changed by a later call with other variables', () => {
    const t = [tool('grep')];
    const first = toolsKey(t, undefined);
    const key = first.contextKey;
    toolsKey(t, { enable_thinking: false });
    expect(first.contextKey).toBe(key);
  });

  it('the Qwen3 rendering given the JSON renders as the interpreter does, every call', async () => {
    const tok = await loadTokenizer('qwen3');
    const renderer = new ChatRenderer(tok.templateSource, tok.bosToken, tok.eosToken);
    const chat = [
      { role: 'system' as const, content: 'You are terse.' },
      { role: 'user' as const, content: 'hi' },
    ];
    const messages = toTemplateMessages(chat, true);
    for (const tools of [[tool('bash'), tool('read', 'path')], [tool('edit')]]) {
      const ref = renderer.interpret(chat, { tools, addGenerationPrompt: true });
      for (let i = 0; i < 3; i++) {
        const { json } = toolsKey(tools, undefined);
        expect(renderQwen3(messages, tools, true, undefined, json)).toBe(ref);
        expect(renderer.render(chat, { tools, addGenerationPrompt: true, toolsJson: json })).toBe(ref);
        expect(tok.renderChat(chat, { tools, addGenerationPrompt: true, toolsJson: json })).toBe(ref);
      }
      // The block is remembered with that JSON: the same array without it renders the same.
      expect(renderQwen3(messages, tools, true, undefined)).toBe(ref);
    }
  });
});
