// The stabiliser's secret checks of new originals may run after the upstream send
// (oweSecretChecks + settleOwed, what the stage does): the call's messages and receipts, and the
// state once settled, must be exactly those of checking each original when it is stored: over
// sessions with elisions, secrets in fresh outputs, budgets small enough for the budget pass.
import { describe, expect, it } from 'vitest';
import { createPipeline } from '../../middleware/pipeline.ts';
import { MemorySessionStore } from '../../middleware/session/memory-store.ts';
import { settleOwed, stabilise, type StabiliseState } from '../../middleware/stabilise/stabilise.ts';
import type { ChatMessage, PipelineContext } from '../../middleware/types.ts';
import { elideLastN, randomSession, requestsOf } from './helpers/session-gen.ts';

const SECRET = 'aws key AKIAIOSFODNN7EXAMPLE in the output';

/** Session requests where some fresh tool outputs carry a secret and later calls elide old outputs. */
function requests(seed: number): ChatMessage[][] {
  const msgs = randomSession(seed, 14).map((m, i) =>
    m.role === 'tool' && (i + seed) % 3 === 0 ? { ...m, content: `${m.content}\n${SECRET}` } : m,
  );
  return requestsOf(msgs).map((req, i) => (i % 4 === 3 ? elideLastN(req, 2) : req));
}

function runBoth(reqs: ChatMessage[][], maxBytes: number) {
  let a: StabiliseState | undefined;
  let b: StabiliseState | undefined;
  let owedSeen = 0;
  for (const req of reqs) {
    const ra = stabilise(req, a, { maxBytes });
    const rb = stabilise(req, b, { maxBytes, oweSecretChecks: true });
    expect(rb.messages).toEqual(ra.messages);
    expect(rb.receipts).toEqual(ra.receipts);
    owedSeen += rb.owed?.length ?? 0;
    const settled = rb.owed ? settleOwed(rb.state, rb.owed) : rb.state;
    expect(JSON.stringify(settled)).toBe(JSON.stringify(ra.state));
    a = ra.state;
    b = settled;
  }
  return owedSeen;
}

describe('stabilise: secret checks owed until after the send', () => {
  it('settled state, messages and receipts equal checking at store time (budget ample and tight)', () => {
    let owed = 0;
    for (let seed = 1; seed <= 12; seed++) {
      const reqs = requests(seed);
      owed += runBoth(reqs, 512 * 1024);
      // Tight: the budget pass drops originals, so the owed checks must run before it.
      owed += runBoth(reqs, 1200);
      owed += runBoth(reqs, 4000);
    }
    expect(owed).toBeGreaterThan(0);
  });

  it('an original that looks secret is stored until settled, then gone; a clean one stays', () => {
    const req: ChatMessage[] = [
      { role: 'user', content: 'task' },
      { role: 'assistant', content: 'looking' },
      { role: 'tool', tool_call_id: 'c1', content: `line\n${SECRET}` },
      { role: 'assistant', content: 'next' },
      { role: 'tool', tool_call_id: 'c2', content: 'plain output' },
      { role: 'assistant', content: 'done' },
    ];
    const r = stabilise(req, undefined, { oweSecretChecks: true });
    expect(r.owed).toEqual([2, 4]);
    expect(Object.keys(r.state.orig)).toEqual(['2', '4']);
    const s = settleOwed(r.state, r.owed!);
    expect(Object.keys(s.orig)).toEqual(['4']);
    expect(s.bytes).toBe('plain output'.length);
    // Nothing secret: the same state object back.
    expect(settleOwed(s, [4])).toBe(s);
  });
});

describe('stabilise through the pipeline: owed checks settle before the state is stored', () => {
  it('a fresh tool output that looks secret is never in the stored state; a clean one is (deferStore, sent gate)', async () => {
    const store = new MemorySessionStore();
    const p = createPipeline({ model: 'm', tokenizer: 'qwen3', store });
    const msgs: ChatMessage[] = [
      { role: 'user', content: 'task' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'c1', type: 'function', function: { name: 'run', arguments: '{}' } }],
      },
      { role: 'tool', tool_call_id: 'c1', content: `env dump\n${SECRET}` },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'c2', type: 'function', function: { name: 'run', arguments: '{}' } }],
      },
      { role: 'tool', tool_call_id: 'c2', content: 'clean output' },
    ];
    let open: (() => void) | undefined;
    const ctx: PipelineContext = {
      tenant: 't',
      requestId: 'r1',
      headers: { 'x-session-id': 's-owed' },
      model: 'm',
      deferStore: true,
      sent: (run) => {
        open = run;
      },
    };
    const r = await p.process({ model: 'm', messages: [...msgs, { role: 'user', content: 'go on' }] }, ctx);
    // Not stored before the send; once the gate opens the owed check has run.
    expect(await store.get('t', r.sessionId!)).toBeUndefined();
    open!();
    await r.stored;
    const st = await store.get('t', r.sessionId!);
    const stab = st?.stages?.stabilise?.s as StabiliseState;
    expect(Object.keys(stab.orig)).toEqual(['4', '5']);
    expect(JSON.stringify(st)).not.toContain('AKIA');
  });
});
