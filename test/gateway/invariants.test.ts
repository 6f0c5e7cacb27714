// The lossless invariants on the chain `serve` runs (layout stages + stabilise → ledger →
// compaction), one reproduction per failure reported against it: static example dates cut on
// the first call, instruction lines losing spans, a one-line dated root emptied, indentation
// lost, a hard eviction with no budget. Checked with the project's lossless checker.
import { describe, expect, it } from 'vitest';
import { createLosslessTracker, type LosslessReport } from '../../middleware/lossless/check.ts';
import { VOLATILE_PLACEHOLDER } from '../../middleware/lossless/placeholder.ts';
import { createPipeline } from '../../middleware/pipeline.ts';
import type { ChatMessage, ChatRequest, PipelineResult } from '../../middleware/types.ts';

type Transforms = Record<string, boolean | 'eager'>;

function session(opts: { budget?: number; transforms?: Transforms } = {}) {
  const p = createPipeline({
    model: 'm',
    tokenizer: 'qwen3',
    transforms: opts.transforms,
    budgetTokens: opts.budget,
  });
  const t = createLosslessTracker();
  let n = 0;
  return async (body: ChatRequest): Promise<{ r: PipelineResult; check: LosslessReport }> => {
    const frozen = structuredClone(body);
    const r = await p.process(body, {
      tenant: 't',
      requestId: `r${n++}`,
      headers: { 'x-session-id': 's' },
      model: 'm',
    });
    return { r, check: t.check(frozen, r.body, r.receipts) };
  };
}

const clean = { missing: 0, altered: 0, first_call_changed: 0 };
const req = (
  system: string,
  rest: ChatMessage[] = [{ role: 'user', content: 'Fix the failing test.' }],
): ChatRequest => ({ model: 'm', messages: [{ role: 'system', content: system }, ...rest] });
/** The task and `i` agent turns after it: call i+1 of a session. */
const turns = (i: number): ChatMessage[] => [
  { role: 'user', content: 'Fix the failing test.' },
  ...Array.from({ length: i }, (_, k): ChatMessage[] => [
    { role: 'assistant', content: `step ${k}` },
    { role: 'user', content: `output ${k}` },
  ]).flat(),
];

const AGENT_PROMPT = [
  'You are Qwen Code, an interactive CLI agent.',
  'Resolve relative dates (e.g., "Thursday" → "2026-03-05") before scheduling.',
  'Note: merge freeze begins 2026-03-05 for mobile.',
  'Never push to branch release-2024-06-01 directly.',
  'Step 1 of 3: always run the linter first.',
  '    - indented rule, request id 3f2a9c11 is an example',
  'Current date: 2026-03-02',
].join('\n');

describe('lossless invariants on the served chain', () => {
  it('the first call reaches the worker unchanged (static dates, ids, counters, indentation)', async () => {
    const call = session();
    const body = req(AGENT_PROMPT);
    const { r, check } = await call(body);
    expect(check).toMatchObject(clean);
    expect(JSON.stringify(r.body.messages)).toBe(JSON.stringify(body.messages));
  });

  it('static text with dates stays in place on later calls; only the line that changed leaves, with a placeholder', async () => {
    const call = session();
    const history: ChatMessage[] = [{ role: 'user', content: 'Fix the failing test.' }];
    for (let i = 0; i < 4; i++) {
      const sys = AGENT_PROMPT.replace('Current date: 2026-03-02', `Current date: 2026-03-0${2 + i}`).replace(
        'Step 1 of 3',
        'Step 1 of 3',
      );
      const { r, check } = await call(req(sys, structuredClone(history)));
      expect(check).toMatchObject(clean);
      const root = r.body.messages[0].content as string;
      for (const l of AGENT_PROMPT.split('\n').slice(0, 6)) expect(root.split('\n')).toContain(l);
      if (i >= 2) expect(r.prefix?.break_cause).toBe('none');
      history.push({ role: 'assistant', content: `step ${i}` }, { role: 'user', content: `output ${i}` });
    }
  });

  it('a changing span inside an instruction line leaves a visible placeholder, never a silent cut; whitespace kept', async () => {
    const call = session();
    const roots: string[] = [];
    for (let i = 0; i < 3; i++) {
      const { r, check } = await call(
        req(`  You are agent X; the time is 2026-03-05T10:0${i}:00Z, plan  accordingly.\nBe brief.`, turns(i)),
      );
      expect(check).toMatchObject(clean);
      roots.push(r.body.messages[0].content as string);
    }
    expect(roots[1]).toBe(`  You are agent X; the time is ${VOLATILE_PLACEHOLDER}, plan  accordingly.\nBe brief.`);
    expect(roots[2]).toBe(roots[1]);
  });

  it('an agent opening a conversation another agent opened identically still passes unchanged', async () => {
    const call = session();
    const opening = (min: number) => req(`Current date: 2026-03-05T10:${min}:00Z\nYou are a coding agent.`);
    expect((await call(opening(10))).check).toMatchObject(clean);
    // The second agent's first call lands in the same session (same root and task): not moved.
    const frozen = createLosslessTracker();
    const second = opening(15);
    const { r } = await call(structuredClone(second));
    expect(frozen.check(second, r.body, r.receipts)).toMatchObject(clean);
    expect(JSON.stringify(r.body.messages)).toBe(JSON.stringify(second.messages));
  });

  it('a one-line dated system prompt never leaves an empty root', async () => {
    const call = session();
    for (let i = 0; i < 3; i++) {
      const { r, check } = await call(req(`Today is 2026-03-0${5 + i}.`, turns(i)));
      expect(check).toMatchObject(clean);
      expect((r.body.messages[0].content as string).trim()).not.toBe('');
      if (i > 0) expect(r.body.messages[0].content).toBe(`Today is ${VOLATILE_PLACEHOLDER}.`);
    }
  });

  it('eager (opt-in) moves a whole label line on first sight; off by default', async () => {
    const eager = session({ transforms: { volatile: 'eager' } });
    const { r, check } = await eager(req('Current date: 2026-03-05\nYou are a careful agent.'));
    expect(r.body.messages[0].content).toBe('You are a careful agent.');
    expect(check).toMatchObject({ missing: 0, altered: 0, first_call_changed: 1, moved: 1 });
    const plain = session();
    expect((await plain(req('Current date: 2026-03-05\nYou are a careful agent.'))).check).toMatchObject(clean);
  });

  it('without a budget a stale read is tombstoned, never replaced', async () => {
    const call = session();
    const listing = Array.from(
      { length: 40 },
      (_, i) => `-rw-r--r-- 1 dev dev ${1000 + i * 37} Mar  5 10:0${i % 10} file_${i}.py`,
    ).join('\n');
    expect(listing.length).toBeGreaterThan(1200);
    const msgs: ChatMessage[] = [
      { role: 'system', content: 'You are a coding agent.' },
      { role: 'user', content: 'Tidy the repo.' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'c1', type: 'function', function: { name: 'bash', arguments: '{"command":"ls -la"}' } }],
      },
      { role: 'tool', tool_call_id: 'c1', content: listing },
    ];
    await call({ model: 'm', messages: structuredClone(msgs) });
    msgs.push(
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'c2', type: 'function', function: { name: 'bash', arguments: '{"command":"echo x > notes.txt"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'c2', content: '' },
    );
    for (let i = 0; i < 3; i++) {
      const { r, check } = await call({ model: 'm', messages: structuredClone(msgs) });
      expect(check).toMatchObject(clean);
      expect(r.receipts.some((x) => x.action === 'evict')).toBe(false);
      expect(r.body.messages[3].content).toBe(listing);
      msgs.push({ role: 'assistant', content: `ok ${i}` }, { role: 'user', content: 'go on' });
    }
  });
});
