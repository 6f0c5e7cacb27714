// The ledger stage's token counts run after the upstream send (after-send.ts): through a pipeline
// whose state write waits for the caller's send gate (deferStore + sent), a new tool output has
// not been counted when process() returns (its ids are not in the encode cache: the ledger's count
// is the one thing that puts a tool output's own ids there), and once sent, every call's body,
// receipts, token ids, block hashes and stored state are those of a pipeline that writes before
// returning, on sessions whose reads go stale (tombstones) and with compaction (M*, whose stage
// counts the prompt's texts before the send itself).
import { describe, expect, it } from 'vitest';
import type { LedgerState } from '../../middleware/ledger/types.ts';
import { createPipeline } from '../../middleware/pipeline.ts';
import { MemorySessionStore } from '../../middleware/session/memory-store.ts';
import { peekEncoded } from '../../middleware/tokens/encode-cache.ts';
import { loadTokenizer } from '../../middleware/tokens/registry.ts';
import type { ChatMessage, ChatRequest } from '../../middleware/types.ts';

/** File text of its own per test run and call (so no earlier test left its ids in the cache). */
function fileText(tag: string, k: number): string {
  return Array.from(
    { length: 30 },
    (_, i) => `${i + 1}\tdef ledger_after_send_${tag}_${k}_${i}(x):  return x + ${i}`,
  ).join('\n');
}

/** Calls of one session: reads of new files, every 4th call an edit of the file read 3 calls before. */
function session(tag: string, calls: number): ChatRequest[] {
  const msgs: ChatMessage[] = [
    { role: 'system', content: 'You are a coding agent.' },
    { role: 'user', content: `Task ${tag}: fix the bug.` },
  ];
  const out: ChatRequest[] = [];
  for (let k = 1; k <= calls; k++) {
    const edit = k % 4 === 0;
    const path = `src/f_${edit ? k - 3 : k}.py`;
    const id = `call_${k}`;
    const args = JSON.stringify(edit ? { path, old: 'a', new: 'b' } : { path });
    msgs.push(
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id, type: 'function', function: { name: edit ? 'edit_file' : 'read_file', arguments: args } }],
      },
      { role: 'tool', tool_call_id: id, content: edit ? `edited ${path}` : fileText(tag, k) },
    );
    out.push({ model: 'm', max_tokens: 8, messages: msgs.slice() } as ChatRequest);
  }
  return out;
}

const strip = (k: string, v: unknown) => (k === 'updatedAt' || k === 'at' ? 0 : v);

async function compare(
  budgetTokens: number | undefined,
  tag: string,
): Promise<{ tombstones: number; compacted: number }> {
  const tok = await loadTokenizer('qwen3');
  const deferredStore = new MemorySessionStore();
  const inlineStore = new MemorySessionStore();
  const budget = budgetTokens ? { budgetTokens } : {};
  const deferred = createPipeline({ model: 'm', tokenizer: 'qwen3', store: deferredStore, ...budget });
  const inline = createPipeline({ model: 'm', tokenizer: 'qwen3', store: inlineStore, ...budget });
  let tombstones = 0;
  let compacted = 0;
  const reqs = session(tag, 24);
  for (const [i, req] of reqs.entries()) {
    const ctx = { tenant: 't', requestId: `r${i}`, headers: { 'x-session-id': tag }, model: 'm' };
    let send: (() => void) | undefined;
    const a = await deferred.process(structuredClone(req), {
      ...ctx,
      deferStore: true,
      sent: (run: () => void) => {
        send = run;
      },
    });
    const last = req.messages[req.messages.length - 1];
    const fresh = typeof last.content === 'string' && last.content.includes('ledger_after_send_');
    // Before the send: the new output's own ids were never encoded (the ledger has not counted it).
    // (With M* the compaction stage counts the prompt's texts before the send itself.)
    if (fresh && !budgetTokens) expect(peekEncoded(tok.name, last.content as string)).toBeUndefined();
    send?.();
    await a.stored;
    if (fresh) expect(peekEncoded(tok.name, last.content as string)).toBeDefined();
    const b = await inline.process(structuredClone(req), ctx);
    const view = async (r: typeof a, store: MemorySessionStore) =>
      JSON.stringify(
        {
          body: r.body,
          receipts: r.receipts,
          ids: r.promptTokenIds ? Array.from(r.promptTokenIds) : null,
          hashes: r.blockHashes,
          state: await store.get('t', r.sessionId),
        },
        strip,
      );
    expect(await view(a, deferredStore)).toBe(await view(b, inlineStore));
    // And each stored observation holds its own text's count (both pipelines run the same stage).
    const part = (await deferredStore.get('t', a.sessionId))?.stages?.ledger?.s as LedgerState;
    for (const o of part.observations)
      expect(o.tokens).toBe(tok.encode(req.messages[o.index].content as string).length);
    tombstones += a.receipts.filter((x) => x.action === 'tombstone').length;
    compacted += a.receipts.filter((x) => x.stage === 'compaction').length;
  }
  return { tombstones, compacted };
}

describe('ledger counts after the send', () => {
  it('deferred and inline pipelines: same bodies, receipts, ids, hashes and stored state', async () => {
    expect((await compare(undefined, `plain${process.pid}`)).tombstones).toBeGreaterThan(3);
  }, 120_000);

  it('the same with compaction (M* = 2048)', async () => {
    expect((await compare(2048, `mstar${process.pid}`)).compacted).toBeGreaterThan(0);
  }, 120_000);
});
