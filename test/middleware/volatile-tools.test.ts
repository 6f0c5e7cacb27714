// Volatility inside tool definitions is learned like the root's: call 1 passes unchanged; a line of
// a tool description or schema description seen changing keeps its place with a placeholder, the
// full line is in the leaf note under a header naming the tool, and the tools are byte-stable from
// then on. Contract values (enum, default, names) are never touched. The lossless checker accepts
// exactly that and flags anything else.
import { describe, expect, it } from 'vitest';
import { toolNoteHeader } from '../../middleware/layout/volatile-tools.ts';
import { checkLossless, createLosslessTracker } from '../../middleware/lossless/check.ts';
import { VOLATILE_PLACEHOLDER } from '../../middleware/lossless/placeholder.ts';
import { createPipeline } from '../../middleware/pipeline.ts';
import type { ChatRequest, PipelineResult, ToolDef } from '../../middleware/types.ts';

const P = VOLATILE_PLACEHOLDER;

function toolsAt(i: number, enumValue = 'fast'): ToolDef[] {
  return [
    {
      type: 'function',
      function: {
        name: 'bash',
        description: `Run a shell command.\nThe time is 2026-11-30T03:1${i}:00Z, cwd /tmp/run-${4000 + i}.\nNever use sudo (since release-2024-06-01).`,
        parameters: {
          type: 'object',
          properties: {
            command: { type: 'string', description: `The command (turn ${i + 1} of the session).` },
            mode: { type: 'string', enum: [enumValue, 'slow'], default: enumValue },
            description: { type: 'string', description: 'A property named description is a schema.' },
          },
          required: ['command'],
        },
      },
    },
    {
      type: 'function',
      function: { name: 'read', description: 'Read a file (example: notes-2024-01-01.md).', parameters: {} },
    },
  ];
}

function request(i: number, tools = toolsAt(i)): ChatRequest {
  return {
    model: 'm',
    tools,
    messages: [
      { role: 'system', content: 'You are a coding agent.' },
      { role: 'user', content: 'Fix the bug in src/app.py' },
      ...Array.from({ length: i }, (_, k) => [
        { role: 'assistant', content: `step ${k}` },
        { role: 'user', content: `output ${k}` },
      ]).flat(),
    ],
  };
}

async function run(reqs: ChatRequest[]): Promise<PipelineResult[]> {
  const p = createPipeline({ model: 'm', tokenizer: 'qwen3', layout: 'ctxgate' });
  const out: PipelineResult[] = [];
  for (const [i, r] of reqs.entries())
    out.push(
      await p.process(structuredClone(r), {
        tenant: 't',
        requestId: `r${i}`,
        headers: { 'x-session-id': 's' },
        model: 'm',
      }),
    );
  return out;
}

const noteOf = (r: PipelineResult): string => String(r.body.messages.at(-1)?.content ?? '');

describe('volatile spans in tool definitions', () => {
  it('learned at call 2, placeholder in place, full line in the note, tools byte-stable after; lossless', async () => {
    const reqs = [0, 1, 2, 3].map((i) => request(i));
    const res = await run(reqs);
    expect(JSON.stringify(res[0].body)).toBe(JSON.stringify(reqs[0]));
    const bash = res[1].body.tools![0].function;
    expect(bash.description).toBe(
      `Run a shell command.\nThe time is ${P}, cwd /tmp/run-${P}.\nNever use sudo (since release-2024-06-01).`,
    );
    const props = (bash.parameters as { properties: Record<string, Record<string, unknown>> }).properties;
    expect(props.command.description).toBe(`The command (${P} of the session).`);
    // Static text, contract values and the other tool untouched.
    expect(props.mode).toEqual({ type: 'string', enum: ['fast', 'slow'], default: 'fast' });
    expect(res[1].body.tools![1]).toEqual(reqs[1].tools![1]);
    for (const r of res.slice(2)) expect(JSON.stringify(r.body.tools)).toBe(JSON.stringify(res[1].body.tools));
    expect(res.map((r) => r.prefix?.break_cause)).toEqual(['new_session', 'tools_changed', 'none', 'none']);
    const note = noteOf(res[3]);
    expect(note).toContain(`${toolNoteHeader('bash')}\nThe time is 2026-11-30T03:13:00Z, cwd /tmp/run-4003.`);
    expect(note).toContain('The command (turn 4 of the session).');
    expect(res[3].receipts.filter((r) => r.stage === 'volatile' && r.action === 'placeholder')).toHaveLength(2);
    const t = createLosslessTracker();
    for (const [i, r] of res.entries()) {
      const rep = t.check(reqs[i], r.body, r.receipts);
      expect({ m: rep.missing, a: rep.altered, f: rep.first_call_changed }).toEqual({ m: 0, a: 0, f: 0 });
      if (i > 0) expect(rep.moved).toBeGreaterThanOrEqual(2);
    }
  });

  it('a changing enum/default is the tool contract: passed through, never a placeholder', async () => {
    const reqs = [0, 1, 2].map((i) => request(0, toolsAt(0, `fast${i}`)));
    reqs.forEach((r, i) => r.messages.push(...request(i).messages.slice(2)));
    const res = await run(reqs);
    for (const [i, r] of res.entries()) {
      expect(JSON.stringify(r.body.tools)).toBe(JSON.stringify(reqs[i].tools));
      expect(JSON.stringify(r.body.tools)).not.toContain(P);
    }
  });

  it('prose-looking keys inside contract values (default, const, enum, examples) are never rewritten', async () => {
    const contract = (i: number): ToolDef[] => [
      {
        type: 'function',
        function: {
          name: 'cfg',
          description: 'Set config.',
          parameters: {
            type: 'object',
            properties: {
              opts: {
                type: 'object',
                default: { title: `build-${1000 + i}`, description: `run ${i}` },
                const: { title: `c-${i}` },
                enum: [{ description: `e-${i}` }],
                examples: [{ description: `example run ${i}` }],
                example: { title: `x-${i}` },
                properties: { when: { type: 'string', description: `as of 2026-11-30T03:1${i}:00Z` } },
              },
            },
          },
        },
      },
    ];
    const reqs = [0, 1, 2, 3].map((i) => request(i, contract(i)));
    const res = await run(reqs);
    const tr = createLosslessTracker();
    for (const [i, r] of res.entries()) {
      const opts = (r.body.tools![0].function.parameters as { properties: Record<string, Record<string, unknown>> })
        .properties.opts;
      const sent = (reqs[i].tools![0].function.parameters as { properties: Record<string, Record<string, unknown>> })
        .properties.opts;
      for (const k of ['default', 'const', 'enum', 'examples', 'example']) expect(opts[k]).toEqual(sent[k]);
      const rep = tr.check(reqs[i], r.body, r.receipts);
      expect(rep.altered + rep.missing, JSON.stringify(rep.details)).toBe(0);
    }
    // the schema description inside `properties` is still learned (call 2 on)
    expect(JSON.stringify(res[2].body.tools)).toContain(P);
  });

  it('the checker compares non-prose tool values exactly: a placeholder in a default is altered', () => {
    const client = request(1);
    const upstream = structuredClone(client);
    const props = (upstream.tools![0].function.parameters as { properties: Record<string, Record<string, unknown>> })
      .properties;
    props.mode.default = P;
    const line = 'fast';
    const withNote: ChatRequest = {
      ...upstream,
      messages: [...upstream.messages, { role: 'system', content: `${toolNoteHeader('bash')}\n${line}` }],
    };
    const rep = checkLossless({ clientBody: client, upstreamBody: withNote, priorClientBodies: [request(0)] });
    expect(rep.altered).toBe(1);
  });

  it('the checker flags a placeholder whose line is not in a note, or that stands for another line', () => {
    const client = request(1);
    const upstream = structuredClone(client);
    upstream.tools![0].function.description = `Run a shell command.\nThe time is ${P}, cwd /tmp/run-${P}.\nNever use sudo (since release-2024-06-01).`;
    const line = 'The time is 2026-11-30T03:11:00Z, cwd /tmp/run-4001.';
    const withNote = (text: string): ChatRequest => ({
      ...upstream,
      messages: [...upstream.messages, { role: 'system', content: `${toolNoteHeader('bash')}\n${text}` }],
    });
    const prior = [request(0)];
    expect(checkLossless({ clientBody: client, upstreamBody: withNote(line), priorClientBodies: prior }).altered).toBe(
      0,
    );
    expect(checkLossless({ clientBody: client, upstreamBody: upstream, priorClientBodies: prior }).altered).toBe(1);
    expect(
      checkLossless({
        clientBody: client,
        upstreamBody: withNote(line.replace('4001', '4002')),
        priorClientBodies: prior,
      }).altered,
    ).toBe(1);
    // A cut without a placeholder is altered even with the line in the note.
    const cut = structuredClone(upstream);
    cut.tools![0].function.description =
      'Run a shell command.\nThe time is , cwd /tmp/run-.\nNever use sudo (since release-2024-06-01).';
    expect(
      checkLossless({
        clientBody: client,
        upstreamBody: { ...cut, messages: withNote(line).messages },
        priorClientBodies: prior,
      }).altered,
    ).toBe(1);
  });
});
