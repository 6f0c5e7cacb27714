// limits.max_tool_output_bytes reaches the context chain: the stabilise stage of the chain a
// config maps to keeps no tool output longer than the cap in session state (and keeps shorter ones).
import { describe, expect, it } from 'vitest';
import { chainSpecOf, tenantCount } from '../../gateway/assemble.ts';
import { parseConfig } from '../../gateway/config/load.ts';
import { contextStages } from '../../middleware/chain.ts';
import { freshSessionState } from '../../middleware/session/fresh-state.ts';
import { readSlot } from '../../middleware/session/stage-state.ts';
import type { RequestView, StageContext } from '../../middleware/stage.ts';
import { STABILISE_SLOT, type StabiliseState } from '../../middleware/stabilise/stabilise.ts';
import type { ChatMessage } from '../../middleware/types.ts';

async function storedOriginals(maxToolOutputBytes: number | undefined, outputs: string[]): Promise<StabiliseState> {
  const config = parseConfig(
    {
      ...(maxToolOutputBytes ? { limits: { max_tool_output_bytes: maxToolOutputBytes } } : {}),
      models: [{ name: 'm', workers: [{ url: 'http://127.0.0.1:1' }] }],
    },
    't',
  );
  const stabilise = contextStages(chainSpecOf(config.models[0], config)).find((s) => s.name === 'stabilise')!;
  const messages: ChatMessage[] = [{ role: 'user', content: 'task' }];
  outputs.forEach((o, i) => {
    messages.push({
      role: 'assistant',
      content: '',
      tool_calls: [{ id: `c${i}`, type: 'function', function: { name: 'bash', arguments: '{}' } }],
    });
    messages.push({ role: 'tool', tool_call_id: `c${i}`, content: o });
  });
  // The stabilise stage reads only the messages and the session (no tokenizer, no segments).
  const session = freshSessionState('t', 's', 'm', { model: 'm', messages });
  const view = { body: { model: 'm', messages }, session, notes: [] } as unknown as RequestView;
  const r = await stabilise.run(view, {} as StageContext);
  return readSlot(r.view.session, STABILISE_SLOT)!;
}

describe('chain limits', () => {
  it('keeps no stored tool output over limits.max_tool_output_bytes', async () => {
    const capped = await storedOriginals(1000, ['x'.repeat(5000), 'short output']);
    expect(Object.values(capped.orig)).toEqual(['short output']);
    expect(capped.bytes).toBeLessThanOrEqual(1000);
    const uncapped = await storedOriginals(undefined, ['x'.repeat(5000), 'short output']);
    expect(Object.values(uncapped.orig)).toHaveLength(2);
  });

  it('counts the tenants sessions can belong to', () => {
    const models = [{ name: 'm', workers: [{ url: 'http://127.0.0.1:1' }] }];
    expect(tenantCount(parseConfig({ models }, 't'))).toBe(1);
    const keys = ['a', 'b', 'c'].map((t, i) => ({
      key: `sha256:${String(i).repeat(64)}`,
      tenant: t === 'c' ? 'a' : t,
    }));
    expect(tenantCount(parseConfig({ auth: { mode: 'keys', keys }, models }, 't'))).toBe(2);
  });
});
