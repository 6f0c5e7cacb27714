// Per-stage session state: each stage's part lives under its own key with a schema version; a
// part written with another version is not read (that stage starts fresh), the others carry on.
import { describe, expect, it } from 'vitest';
import { VOLATILE_SLOT } from '../../middleware/layout/volatile-stage.ts';
import { LEDGER_SLOT } from '../../middleware/ledger/types.ts';
import { createPipeline, FINGERPRINT_SLOT } from '../../middleware/pipeline.ts';
import { freshSessionState } from '../../middleware/session/fresh-state.ts';
import { MemorySessionStore } from '../../middleware/session/memory-store.ts';
import { clearSlot, defineSlot, readSlot, writeSlot } from '../../middleware/session/stage-state.ts';
import type { ChatMessage, ChatRequest } from '../../middleware/types.ts';

function call(i: number): ChatRequest {
  const messages: ChatMessage[] = [
    { role: 'system', content: `Current date: 2026-11-30T03:${10 + i}:00Z\nYou are a coding agent.` },
    { role: 'user', content: 'Fix the failing test.' },
  ];
  for (let k = 0; k < i; k++)
    messages.push({ role: 'assistant', content: `step ${k}` }, { role: 'user', content: `result ${k}` });
  return { model: 'm', messages };
}

describe('per-stage session state', () => {
  it('reads a part only at the version it was written with', () => {
    const s = freshSessionState('t', 's', 'm', { model: 'm', messages: [] });
    const v1 = defineSlot<{ n: number }>('x', 1);
    const v2 = defineSlot<{ n: number }>('x', 2);
    expect(readSlot(s, v1)).toBeUndefined();
    writeSlot(s, v1, { n: 1 });
    expect(readSlot(s, v1)).toEqual({ n: 1 });
    expect(readSlot(s, v2)).toBeUndefined();
    expect(s.stages).toEqual({ x: { v: 1, s: { n: 1 } } });
    clearSlot(s, v1);
    expect(readSlot(s, v1)).toBeUndefined();
  });

  it('a stage whose stored part has another version starts fresh; the other parts carry on', async () => {
    const store = new MemorySessionStore();
    const p = createPipeline({ model: 'm', tokenizer: 'qwen3', store });
    const ctx = (i: number) => ({ tenant: 't', requestId: `r${i}`, headers: { 'x-session-id': 's' }, model: 'm' });
    const relocated = async (i: number) =>
      (await p.process(call(i), ctx(i))).receipts.some((r) => r.stage === 'volatile' && r.action === 'relocate');
    expect(await relocated(0)).toBe(false); // the first call passes unchanged
    expect(await relocated(1)).toBe(true); // the clock line was seen changing
    expect(await relocated(2)).toBe(true);
    const st = (await store.get('t', 's'))!;
    expect(readSlot(st, VOLATILE_SLOT)?.learned).not.toEqual({});
    const ledgerBefore = readSlot(st, LEDGER_SLOT);
    expect(ledgerBefore?.seen).toBeGreaterThan(0);
    // A replica with another shape of the volatile part wrote it: this one must not read it.
    st.stages!.volatile = { ...st.stages!.volatile, v: VOLATILE_SLOT.version + 1 };
    await store.put(st);
    expect(await relocated(3)).toBe(false); // fresh: nothing learned, nothing moved
    const after = (await store.get('t', 's'))!;
    expect(after.stages!.volatile.v).toBe(VOLATILE_SLOT.version);
    expect(after.calls).toBe(4);
    expect(readSlot(after, LEDGER_SLOT)!.seen).toBeGreaterThan(ledgerBefore!.seen);
    expect(readSlot(after, FINGERPRINT_SLOT)).toBeDefined();
    expect(await relocated(4)).toBe(true); // learned again from what changed
  });
});
