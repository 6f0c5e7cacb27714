// Property test of the chain `serve` runs (layout stages, stabilise → ledger → compaction, leaf
// note), with and without a budget M*: over generated agent sessions — system prompts with static
// dates, ids, counters, indentation and Unicode, a clock or counter line that changes per call,
// reads and later writes of the same files, outputs elided in place with arbitrary markers,
// reshuffled tools, a changing line inside a tool's description or schema — the lossless checker finds nothing missing, nothing altered and no changed
// first call, and the chain is deterministic (two pipelines, same bodies).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createLosslessTracker } from '../../middleware/lossless/check.ts';
import { createPipeline } from '../../middleware/pipeline.ts';
import { MemorySessionStore } from '../../middleware/session/memory-store.ts';
import type { ChatMessage, ChatRequest, ToolDef } from '../../middleware/types.ts';
import { randomSession, requestsOf } from '../middleware/helpers/session-gen.ts';

const staticLine = fc.oneof(
  fc.constantFrom(
    'Resolve relative dates (e.g., "Thursday" → "2026-03-05").',
    'Never push to branch release-2024-06-01 directly.',
    'Step 1 of 3: always run the linter first.',
    '    - indented rule with trailing spaces   ',
    '\tTabbed: request id 3f2a9c11 is only an example',
    'Café — naïve ✓ 日本語 emoji 🚀',
    'Current date: 2026-03-02 (fixed for this benchmark)',
    '',
  ),
  fc.string({ maxLength: 40 }).filter((s) => !s.includes('\n')),
);

/** A line that changes per call, given the call index. */
const changing = fc.constantFrom(
  (i: number) => `Current date: 2026-11-30T03:${String(10 + i).padStart(2, '0')}:00Z`,
  (i: number) => `You have ${5000 - i * 37} tokens left; plan accordingly and keep answers short.`,
  (i: number) => `  Step ${i + 1} of 40: keep going.`,
  (i: number) => `Today is 2026-03-0${1 + (i % 9)}.`,
);

const marker = fc.oneof(
  fc.constantFrom(
    'Old environment output: (N lines omitted)',
    '[output cleared]',
    '<<zapped N>>',
    '~ stale result elided by harness ~',
  ),
  fc.string({ minLength: 1, maxLength: 20 }),
);

const tools: ToolDef[] = [
  {
    type: 'function',
    function: {
      name: 'bash',
      description: 'run a command',
      parameters: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] },
    },
  },
  {
    type: 'function',
    function: {
      name: 'read',
      description: 'read a file',
      parameters: { type: 'object', properties: { path: { type: 'string' }, limit: { type: 'integer' } } },
    },
  },
];

const scenario = fc.record({
  sys: fc.array(staticLine, { minLength: 1, maxLength: 6 }),
  changingAt: fc.option(fc.tuple(fc.nat(6), changing), { nil: undefined }),
  seed: fc.nat(1000),
  calls: fc.integer({ min: 2, max: 9 }),
  elide: fc.option(fc.tuple(fc.integer({ min: 1, max: 3 }), marker), { nil: undefined }),
  shuffle: fc.boolean(),
  toolLine: fc.option(fc.tuple(fc.constantFrom('description', 'schema'), changing), { nil: undefined }),
  budget: fc.constantFrom(undefined, 1536, 3072),
});

type Scenario = typeof scenario extends fc.Arbitrary<infer T> ? T : never;

function requests(s: Scenario): ChatRequest[] {
  const msgs = randomSession(s.seed, s.calls);
  return requestsOf(msgs).map((hist, i) => {
    const lines = s.sys.slice();
    if (s.changingAt) lines.splice(Math.min(s.changingAt[0], lines.length), 0, s.changingAt[1](i));
    let m: ChatMessage[] = [{ role: 'system', content: lines.join('\n') }, ...structuredClone(hist.slice(1))];
    if (s.elide) {
      const [n, mark] = s.elide;
      const toolIdx = m.map((x, k) => (x.role === 'tool' ? k : -1)).filter((k) => k >= 0);
      const old = new Set(toolIdx.slice(0, Math.max(0, toolIdx.length - n)));
      m = m.map((x, k) =>
        old.has(k) ? { ...x, content: mark.replace('N', String(String(x.content).split('\n').length)) } : x,
      );
    }
    const t = structuredClone(tools);
    if (s.toolLine) {
      const [where, line] = s.toolLine;
      const bash = t[0].function;
      if (where === 'description') bash.description = `run a command\n${line(i)}\nStatic: release-2024-06-01.`;
      else
        (bash.parameters as { properties: Record<string, { description?: string }> }).properties.command.description =
          line(i);
    }
    if (s.shuffle && i % 2 === 1) {
      t.reverse();
      t[0].function = {
        parameters: t[0].function.parameters,
        description: t[0].function.description,
        name: t[0].function.name,
      };
    }
    return { model: 'm', messages: m, tools: t };
  });
}

describe('lossless chain (property test over the served stages)', () => {
  it('nothing missing, nothing altered, first call unchanged; deterministic; with and without a budget', async () => {
    await fc.assert(
      fc.asyncProperty(scenario, async (s) => {
        const make = () =>
          createPipeline({
            model: 'm',
            tokenizer: 'cl100k_base',
            store: new MemorySessionStore(),
            budgetTokens: s.budget,
          });
        const a = make();
        const b = make();
        const tracker = createLosslessTracker();
        let prevTools = '';
        for (const [i, req] of requests(s).entries()) {
          const ctx = { tenant: 't', requestId: `r${i}`, headers: { 'x-session-id': 's' }, model: 'm' };
          const frozen = JSON.stringify(req);
          const ra = await a.process(req, ctx);
          expect(JSON.stringify(req)).toBe(frozen);
          const rb = await b.process(JSON.parse(frozen) as ChatRequest, ctx);
          expect(JSON.stringify(rb.body)).toBe(JSON.stringify(ra.body));
          const rep = tracker.check(JSON.parse(frozen) as ChatRequest, ra.body, ra.receipts);
          if (rep.missing || rep.altered || rep.first_call_changed)
            throw new Error(`call ${i}: ${JSON.stringify(rep.details.slice(0, 4))}`);
          // A tool line seen changing is learned at call 2: from then on the tools are byte-stable.
          const toolsNow = JSON.stringify(ra.body.tools);
          if (i >= 2) expect(toolsNow).toBe(prevTools);
          prevTools = toolsNow;
        }
      }),
      { numRuns: 30 },
    );
  });
});
