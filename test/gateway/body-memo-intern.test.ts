// After a memo miss (the session's body evicted), the body memo's objects and the pipeline's
// interned ones meet again: the intern tells the memo its choice (PipelineContext.onInterned ->
// BodyMemo.adopt), so within two calls every resent message is the very object the session stored
// and the intern needs no full compare (review s25 F2). Outputs stay what a plain parse gives.
import { describe, expect, it } from 'vitest';
import { BodyMemo } from '../../gateway/body/body-memo.ts';
import { createPipeline } from '../../middleware/pipeline.ts';
import { MemorySessionStore } from '../../middleware/session/memory-store.ts';
import type { ChatRequest, PipelineContext } from '../../middleware/types.ts';

const MODEL = 'Qwen/Qwen3-8B';

describe('body memo and the pipeline intern', () => {
  it('identity is back within two calls after the session body was evicted', async () => {
    const memo = new BodyMemo({ maxBytes: 400_000 });
    const piped = createPipeline({ model: MODEL, tokenizer: 'qwen3', store: new MemorySessionStore() });
    const plain = createPipeline({ model: MODEL, tokenizer: 'qwen3', store: new MemorySessionStore(), reuse: false });
    const msgs: string[] = [];
    for (let i = 0; i < 20; i++)
      msgs.push(JSON.stringify({ role: i % 2 ? 'assistant' : 'user', content: `turn ${i} `.repeat(200) }));
    /** Swapped messages per call: how many resent messages the intern had to compare in full and replace. */
    const swaps: number[] = [];
    let n = 0;
    const call = async (): Promise<void> => {
      const json = `{"model":"m","messages":[${msgs.join(',')}]}`;
      const out = memo.parse('t', Buffer.from(json), 128);
      memo.keep(out.pending);
      let swapped = 0;
      const ctx: PipelineContext = {
        tenant: 't',
        requestId: `r${n++}`,
        headers: { 'x-session-id': 's1' },
        model: MODEL,
        onInterned: (key, received, interned) => {
          for (let i = 0; i < received.length; i++) if (received[i] !== interned[i]) swapped++;
          memo.adopt(out.pending, key, received, interned);
        },
      };
      const got = await piped.process(out.value as ChatRequest, ctx);
      const want = await plain.process(JSON.parse(json) as ChatRequest, { ...ctx, onInterned: undefined });
      expect(JSON.stringify(got.body)).toBe(JSON.stringify(want.body));
      swaps.push(swapped);
    };
    await call();
    msgs.push(JSON.stringify({ role: 'user', content: 'next' }));
    await call();
    expect(swaps).toEqual([0, 0]);
    // Other sessions of the tenant evict this session's body once.
    for (let s = 0; s < 8; s++) {
      const other = memo.parse(
        't',
        Buffer.from(`{"model":"m","messages":[{"role":"user","content":"other ${s} ${'y'.repeat(60_000)}"}]}`),
        128,
      );
      memo.keep(other.pending);
    }
    for (let c = 3; c <= 7; c++) {
      msgs.push(JSON.stringify({ role: c % 2 ? 'assistant' : 'user', content: `more ${c}` }));
      await call();
    }
    // The call after the eviction compares every resent message (21), then never again.
    expect(swaps.slice(2)).toEqual([21, 0, 0, 0, 0]);
  });
});
