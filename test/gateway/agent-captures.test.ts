// The request streams real agents produced through ctxgate (test/fixtures/agents, recorded by the
// agent tier with CTXGATE_AGENTS_RECORD=1) replayed through the chain `serve` runs, with and
// without a budget: nothing missing or altered, first calls unchanged, deterministic, one
// conversation per run. And the reference worker's tool calls validate against every tool
// schema these agents really offer.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { parseRequestStream } from '../../loadtest/formats/request-stream.ts';
import { rng } from '../../loadtest/sim-worker/generate.ts';
import { argumentsFor, toolKind, type JsonSchema } from '../../loadtest/sim-worker/tool-args.ts';
import { createLosslessTracker } from '../../middleware/lossless/check.ts';
import { createPipeline } from '../../middleware/pipeline.ts';
import { MemorySessionStore } from '../../middleware/session/memory-store.ts';
import type { ChatRequest } from '../../middleware/types.ts';

const DIR = fileURLToPath(new URL('../fixtures/agents/', import.meta.url));
const FILES = readdirSync(DIR)
  .filter((f) => f.endsWith('.jsonl'))
  .sort();

describe('captured real-agent request streams', () => {
  it('fixtures of all four agents are present', () => {
    expect(FILES).toEqual(['claude-code.jsonl', 'codex.jsonl', 'opencode.jsonl', 'qwen-code.jsonl']);
  });

  for (const file of FILES) {
    it(`${file}: lossless, first call unchanged, deterministic, one conversation, with and without a budget`, async () => {
      const session = parseRequestStream(readFileSync(join(DIR, file), 'utf8'), file);
      expect(session.calls.length).toBeGreaterThanOrEqual(4);
      for (const budget of [undefined, 8192]) {
        const make = () =>
          createPipeline({
            model: 'qwen3-coder',
            tokenizer: 'qwen3',
            store: new MemorySessionStore(),
            budgetTokens: budget,
          });
        const a = make();
        const b = make();
        const trackers = new Map<string, ReturnType<typeof createLosslessTracker>>();
        const affinity = new Set<string>();
        for (const [i, call] of session.calls.entries()) {
          // No session header: the derived id, as for agents that send none.
          const ctx = { tenant: 't', requestId: `r${i}`, headers: {}, model: 'qwen3-coder' };
          const frozen = JSON.stringify(call.body);
          const ra = await a.process(JSON.parse(frozen) as ChatRequest, ctx);
          const rb = await b.process(JSON.parse(frozen) as ChatRequest, ctx);
          expect(JSON.stringify(rb.body)).toBe(JSON.stringify(ra.body));
          if (call.body.tools?.length) affinity.add(ra.affinityKey ?? ra.sessionId);
          let t = trackers.get(ra.sessionId);
          if (!t) trackers.set(ra.sessionId, (t = createLosslessTracker()));
          const rep = t.check(JSON.parse(frozen) as ChatRequest, ra.body, ra.receipts);
          expect({
            call: i,
            budget,
            missing: rep.missing,
            altered: rep.altered,
            first_call_changed: rep.first_call_changed,
            details: rep.details.slice(0, 3),
          }).toEqual({
            call: i,
            budget,
            missing: 0,
            altered: 0,
            first_call_changed: 0,
            details: [],
          });
        }
        expect(affinity.size).toBe(1);
      }
    });
  }

  it('the reference worker writes arguments that validate against every tool schema the agents offer', () => {
    const ajv = new Ajv({ strict: false, validateSchema: false });
    let checked = 0;
    for (const file of FILES) {
      const session = parseRequestStream(readFileSync(join(DIR, file), 'utf8'), file);
      const tools = new Map<string, JsonSchema>();
      for (const c of session.calls)
        for (const t of c.body.tools ?? [])
          tools.set(t.function.name, (t.function.parameters ?? { type: 'object' }) as JsonSchema);
      for (const [name, schema] of tools) {
        const { $schema: _ignored, ...plain } = schema as JsonSchema & { $schema?: string };
        const validate = ajv.compile(plain);
        const ws = { dir: '/work', files: ['/work/README.md', '/work/src/calc.py'] };
        for (let s = 0; s < 5; s++) {
          const args = argumentsFor(schema, toolKind(name, schema), ws, rng(s));
          expect(validate(args), `${file} ${name}: ${JSON.stringify(args)} ${ajv.errorsText(validate.errors)}`).toBe(
            true,
          );
        }
        checked++;
      }
    }
    expect(checked).toBeGreaterThanOrEqual(30);
  });
});
