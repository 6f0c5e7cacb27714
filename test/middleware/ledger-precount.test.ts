// The ledger's sliced token counts (middleware/ledger/precount.ts): a call with big new tool
// outputs counts them with the event loop yielded between slices, and the ledger's state, receipts
// and messages are exactly those of an inline count.
import { describe, expect, it } from 'vitest';
import { segment } from '../../middleware/layout/segmentation.ts';
import { applyLedger } from '../../middleware/ledger/ledger.ts';
import { PRECOUNT_MIN_CHARS, precountTexts } from '../../middleware/ledger/precount.ts';
import { readLedger } from '../../middleware/ledger/slot.ts';
import { createLedgerStage } from '../../middleware/ledger/stage.ts';
import type { LedgerState } from '../../middleware/ledger/types.ts';
import { freshSessionState } from '../../middleware/session/fresh-state.ts';
import type { StageContext, StageResult } from '../../middleware/stage.ts';
import { loadTokenizer } from '../../middleware/tokens/registry.ts';
import type { ChatMessage } from '../../middleware/types.ts';
import { codeLines, randomSession, requestsOf, rng } from './helpers/session-gen.ts';

const NOW_MS = 1_700_000_000_000;

async function context(newSession: boolean): Promise<StageContext> {
  return {
    tenant: 't',
    requestId: 'r',
    model: 'm',
    sessionId: 's',
    newSession,
    headers: {},
    tokenizer: await loadTokenizer('qwen3'),
    blockSize: 16,
    now: () => NOW_MS,
  };
}

/** A random session whose reads print big files (fresh text each), sent 4 calls at a time. */
function bigRequests(seed: number): ChatMessage[][] {
  const r = rng(seed);
  const msgs = randomSession(seed, 48).map((m, i) =>
    m.role === 'tool' && String(m.content).length > 200
      ? { ...m, content: `${String(m.content)}\n${codeLines(`f${i}_${Math.floor(r() * 1e9)}`, 1000)}` }
      : m,
  );
  return requestsOf(msgs).filter((_, k) => k % 4 === 3);
}

describe('ledger precount', () => {
  it('states, receipts and messages equal an inline count on every call', async () => {
    const ctx = await context(false);
    const count = (t: string): number => ctx.tokenizer.encodeCached(t).length;
    let sliced = 0;
    let calls = 0;
    for (const seed of [1, 2, 3]) {
      const stage = createLedgerStage();
      const reqs = bigRequests(seed);
      const session = freshSessionState('t', 's', 'm', { model: 'm', messages: reqs[0] });
      let inline: LedgerState | undefined;
      for (const messages of reqs) {
        const view = { body: { model: 'm', messages }, segments: segment(messages), session, notes: [] };
        if (precountTexts(messages, readLedger(session)) !== undefined) sliced++;
        const got = (await stage.run(view, ctx)) as StageResult;
        const want = applyLedger(messages, inline, { countTokens: count, now: Math.floor(NOW_MS / 1000) });
        inline = want.state;
        expect(JSON.stringify(readLedger(session))).toBe(JSON.stringify(want.state));
        expect(JSON.stringify(got.receipts)).toBe(JSON.stringify(want.receipts.map((x) => ({ ...x }))));
        expect(JSON.stringify(got.view.body.messages)).toBe(JSON.stringify(want.messages));
        calls++;
      }
      expect(inline!.tombstones.length).toBeGreaterThan(0);
    }
    expect(calls).toBeGreaterThan(30);
    // Most calls carry ~2 new big outputs (4 tool results): the sliced path is what was compared.
    expect(sliced).toBeGreaterThan(calls / 3);
  });

  it('yields the event loop between the outputs of a big call; a small call stays synchronous', async () => {
    const ctx = await context(true);
    const messages: ChatMessage[] = [
      { role: 'system', content: 'You are a coding agent.' },
      { role: 'user', content: 'Read the files.' },
    ];
    for (let i = 0; i < 8; i++) {
      const id = `call_${i}`;
      messages.push({
        role: 'assistant',
        content: null,
        tool_calls: [{ id, type: 'function', function: { name: 'bash', arguments: `{"command":"cat f${i}.py"}` } }],
      });
      messages.push({ role: 'tool', tool_call_id: id, content: codeLines(`big${i}`, 1000) });
    }
    const chars = messages.reduce((n, m) => n + (m.role === 'tool' ? String(m.content).length : 0), 0);
    expect(chars).toBeGreaterThan(PRECOUNT_MIN_CHARS);
    const view = (msgs: ChatMessage[]) => ({
      body: { model: 'm', messages: msgs },
      segments: segment(msgs),
      session: freshSessionState('t', 's', 'm', { model: 'm', messages: msgs }),
      notes: [],
    });
    let ticks = 0;
    let ticking = true;
    const tick = (): void => {
      ticks++;
      if (ticking) setImmediate(tick);
    };
    setImmediate(tick);
    const out = createLedgerStage().run(view(messages), ctx);
    expect(out).toBeInstanceOf(Promise);
    const r = (await out) as StageResult;
    ticking = false;
    // One output is ~40k characters (over a slice): a yield before each but the first.
    expect(ticks).toBeGreaterThanOrEqual(7);
    expect(readLedger(r.view.session)?.observations).toHaveLength(8);

    const small = messages.slice(0, 4);
    expect(createLedgerStage().run(view(small), ctx)).not.toBeInstanceOf(Promise);
  });
});
