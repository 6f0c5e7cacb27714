// Reference-worker realism: answer lengths drawn from a seeded distribution with max_tokens only a
// cap, tool calls whose arguments validate against the offered schemas and name the agent's real
// files, and agent loops that finish. Pure functions first, then over real sockets with the SDK.
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ajv } from 'ajv';
import fc from 'fast-check';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  answerLength,
  chooseTool,
  DEFAULT_MAX_OUTPUT,
  DEFAULT_MIN_OUTPUT,
  rng,
  toolTurnsOf,
} from '../../loadtest/sim-worker/generate.ts';
import { startSimWorker, type SimWorker } from '../../loadtest/sim-worker/index.ts';
import { argumentsFor, toolKind, type JsonSchema } from '../../loadtest/sim-worker/tool-args.ts';
import { listFiles, mentionedFiles, workingDirOf, workspaceOf } from '../../loadtest/sim-worker/workspace.ts';
import { useTempDirs } from '../helpers/temp-dirs.ts';

const tempDir = useTempDirs();
const ajv = new Ajv({ strict: false });

const fn = (name: string, description: string, properties: Record<string, JsonSchema>, required: string[]) => ({
  type: 'function' as const,
  function: { name, description, parameters: { type: 'object', properties, required, additionalProperties: false } },
});

/** Tool shapes as coding agents declare them (absolute paths, globs, shell commands, edits). */
const AGENT_TOOLS = [
  fn(
    'read_file',
    'Reads a file',
    { absolute_path: { type: 'string', minLength: 1 }, offset: { type: 'number' }, limit: { type: 'number' } },
    ['absolute_path'],
  ),
  fn(
    'list_directory',
    'Lists a directory',
    { path: { type: 'string' }, ignore: { type: 'array', items: { type: 'string' } } },
    ['path'],
  ),
  fn('glob', 'Finds files', { pattern: { type: 'string' }, path: { type: 'string' } }, ['pattern']),
  fn(
    'grep_search',
    'Searches file contents',
    { pattern: { type: 'string' }, path: { type: 'string' }, include: { type: 'string' } },
    ['pattern'],
  ),
  fn(
    'run_shell_command',
    'Runs a shell command',
    { command: { type: 'string' }, description: { type: 'string' }, is_background: { type: 'boolean' } },
    ['command', 'is_background'],
  ),
  fn('write_file', 'Writes a file', { file_path: { type: 'string' }, content: { type: 'string' } }, [
    'file_path',
    'content',
  ]),
  fn(
    'edit',
    'Replaces text',
    { filePath: { type: 'string' }, oldString: { type: 'string' }, newString: { type: 'string' } },
    ['filePath', 'oldString', 'newString'],
  ),
];

function workspace(): { dir: string; files: string[] } {
  const dir = tempDir('sim-ws-');
  mkdirSync(join(dir, 'src'));
  writeFileSync(join(dir, 'README.md'), '# demo\n');
  writeFileSync(join(dir, 'src', 'app.py'), 'def add(a, b):\n    return a + b\n');
  writeFileSync(join(dir, 'src', 'util.py'), 'X = 1\n');
  mkdirSync(join(dir, 'node_modules'));
  writeFileSync(join(dir, 'node_modules', 'skip.js'), '');
  return { dir, files: [join(dir, 'README.md'), join(dir, 'src', 'app.py'), join(dir, 'src', 'util.py')] };
}

describe('answer length', () => {
  it('is drawn from a seeded distribution: max_tokens caps it, never sets it', () => {
    const lengths: number[] = [];
    for (let seed = 0; seed < 400; seed++) {
      const r = answerLength({ promptIds: [], seed, maxTokens: 32_768 }, rng(seed));
      expect(r.cut).toBe(false);
      expect(r.n).toBeGreaterThanOrEqual(DEFAULT_MIN_OUTPUT);
      expect(r.n).toBeLessThanOrEqual(DEFAULT_MAX_OUTPUT);
      lengths.push(r.n);
    }
    lengths.sort((a, b) => a - b);
    expect(new Set(lengths).size).toBeGreaterThan(100);
    expect(lengths[200]).toBeGreaterThan(50);
    expect(lengths[200]).toBeLessThan(200);
    // The same seed draws the same length.
    expect(answerLength({ promptIds: [], seed: 0 }, rng(5))).toEqual(answerLength({ promptIds: [], seed: 0 }, rng(5)));
  });

  it('a cap below the draw cuts (length); ignore_eos fills the cap; min_tokens raises the floor; the context caps an uncapped answer', () => {
    expect(answerLength({ promptIds: [], seed: 0, maxTokens: 5 }, rng(1))).toEqual({ n: 5, cut: true });
    expect(answerLength({ promptIds: [], seed: 0, maxTokens: 700, ignoreEos: true }, rng(1))).toEqual({
      n: 700,
      cut: true,
    });
    for (let s = 0; s < 50; s++) {
      const r = answerLength({ promptIds: [], seed: 0, maxTokens: 4000, minTokens: 1500 }, rng(s));
      expect(r.n).toBeGreaterThanOrEqual(1500);
    }
    expect(answerLength({ promptIds: [], seed: 0, contextLeft: 3 }, rng(1))).toEqual({ n: 3, cut: true });
  });
});

describe('tool-call arguments', () => {
  it('validate against agent tool schemas and name files of the workspace', () => {
    const ws = workspace();
    for (const t of AGENT_TOOLS) {
      const validate = ajv.compile(t.function.parameters);
      for (let s = 0; s < 20; s++) {
        const args = argumentsFor(t.function.parameters, toolKind(t.function.name, t.function.parameters), ws, rng(s));
        expect(validate(args), `${t.function.name}: ${JSON.stringify(args)} ${ajv.errorsText(validate.errors)}`).toBe(
          true,
        );
      }
    }
    const read = argumentsFor(AGENT_TOOLS[0].function.parameters, 'read', ws, rng(3));
    expect(ws.files).toContain(read.absolute_path);
    expect(argumentsFor(AGENT_TOOLS[1].function.parameters, 'list', ws, rng(3)).path).toBe(ws.dir);
    const cmd = String(argumentsFor(AGENT_TOOLS[4].function.parameters, 'shell', ws, rng(3)).command);
    expect(cmd).toMatch(/^(ls -la|cat|head -n 40|wc -l) /);
    expect(ws.files.some((f) => cmd.endsWith(f)) || cmd.endsWith(ws.dir)).toBe(true);
  });

  it('property: arguments validate against any schema built from types, enums, consts, bounds and nesting', () => {
    const leaf: fc.Arbitrary<JsonSchema> = fc.oneof(
      fc.record({
        type: fc.constant('string'),
        minLength: fc.option(fc.integer({ min: 0, max: 40 }), { nil: undefined }),
        maxLength: fc.option(fc.integer({ min: 40, max: 80 }), { nil: undefined }),
      }),
      fc
        .tuple(
          fc.constantFrom('integer', 'number'),
          fc.integer({ min: -50, max: 200 }),
          fc.integer({ min: -50, max: 200 }),
          fc.constantFrom('both', 'min', 'max'),
        )
        .map(([type, a, b, which]) => ({
          type,
          ...(which !== 'max' ? { minimum: Math.min(a, b) } : {}),
          ...(which !== 'min' ? { maximum: Math.max(a, b) } : {}),
        })),
      fc.record({
        type: fc.constantFrom('integer', 'number'),
        exclusiveMinimum: fc.integer({ min: 60, max: 90 }),
        exclusiveMaximum: fc.integer({ min: 95, max: 99 }),
      }),
      fc.record({ type: fc.constant('boolean') }),
      fc.record({ type: fc.constant<string[]>(['string', 'null']) }),
      fc.record({ enum: fc.uniqueArray(fc.oneof(fc.string(), fc.integer()), { minLength: 1, maxLength: 4 }) }),
      fc.record({ const: fc.oneof(fc.string(), fc.integer(), fc.boolean()) }),
      fc.record({
        anyOf: fc.tuple(fc.record({ type: fc.constant('string') }), fc.record({ type: fc.constant('integer') })),
      }),
    );
    const schema = fc.letrec<{ node: JsonSchema }>((tie) => ({
      node: fc.oneof(
        { depthSize: 'small', withCrossShrink: true },
        leaf,
        fc.record({ type: fc.constant('array'), items: tie('node'), minItems: fc.integer({ min: 0, max: 3 }) }),
        fc
          .dictionary(
            fc.constantFrom('path', 'file_path', 'command', 'pattern', 'dir', 'limit', 'offset', 'query', 'x', 'y'),
            tie('node'),
            { minKeys: 1, maxKeys: 4 },
          )
          .map((properties) => ({
            type: 'object',
            properties,
            required: Object.keys(properties),
            additionalProperties: false,
          })),
      ),
    })).node;
    const ws = workspace();
    fc.assert(
      fc.property(
        schema,
        fc.constantFrom<'read' | 'list' | 'shell' | 'grep' | 'other'>('read', 'list', 'shell', 'grep', 'other'),
        fc.integer(),
        (s, kind, seed) => {
          const root: JsonSchema =
            s.type === 'object'
              ? s
              : { type: 'object', properties: { v: s }, required: ['v'], additionalProperties: false };
          const args = argumentsFor(root, kind, ws, rng(seed));
          const validate = ajv.compile(root);
          return validate(args);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('a tool-call rate below 1 calls a tool on about that share of seeds; past the turn cap it answers in text', () => {
    const tools = AGENT_TOOLS as unknown as Parameters<typeof chooseTool>[0]['tools'];
    let calls = 0;
    for (let seed = 0; seed < 1000; seed++) {
      if (chooseTool({ promptIds: [], seed, tools, toolCallRate: 0.6, maxToolTurns: 3, toolTurns: 1 }, rng(seed))) {
        calls++;
      }
      expect(
        chooseTool({ promptIds: [], seed, tools, toolCallRate: 1, maxToolTurns: 3, toolTurns: 3 }, rng(seed)),
      ).toBe(undefined);
    }
    expect(calls).toBeGreaterThan(540);
    expect(calls).toBeLessThan(660);
  });

  it('tool kinds: read-only tools are recognised, state-changing ones are not', () => {
    expect(AGENT_TOOLS.map((t) => toolKind(t.function.name, t.function.parameters))).toEqual([
      'read',
      'list',
      'glob',
      'grep',
      'shell',
      'other',
      'other',
    ]);
    expect(toolKind('bash', { properties: { command: {} } })).toBe('shell');
    expect(toolKind('todo_write', undefined)).toBe('other');
  });
});

describe('workspace from the prompt', () => {
  it('finds the working directory agents state, lists its files only under allowed roots', () => {
    const ws = workspace();
    expect(workingDirOf(`Here is some useful information:\n<env>\n  Working directory: ${ws.dir}\n</env>`)).toBe(
      ws.dir,
    );
    expect(workingDirOf(`I'm currently working in the directory: ${ws.dir}.`)).toBe(ws.dir);
    expect(workingDirOf(`cwd: ${ws.dir}`)).toBe(ws.dir);
    expect(workingDirOf(`<environment_context>\n  <cwd>${ws.dir}</cwd>\n`)).toBe(ws.dir);
    expect(workingDirOf('no directory here')).toBeUndefined();
    expect(listFiles(ws.dir, [tmpdir()])).toEqual(ws.files);
    expect(listFiles(ws.dir, [])).toBeUndefined();
    expect(listFiles(ws.dir, [join(tmpdir(), 'somewhere-else')])).toBeUndefined();
    expect(listFiles('/etc', [ws.dir])).toBeUndefined();
    // A link inside the workspace to a folder outside it is not followed.
    symlinkSync('/etc', join(ws.dir, 'etc-link'));
    expect(listFiles(ws.dir, [tmpdir()])).toEqual(ws.files);
    // Without a listable root only the paths the prompt itself mentions are used.
    const text = `Working directory: /srv/repo\nFiles:\n├── src/main.go\n└── docs/guide.md\nversion 1.2.3 see example.com`;
    expect(mentionedFiles(text, '/srv/repo')).toEqual(['/srv/repo/docs/guide.md', '/srv/repo/src/main.go']);
    expect(workspaceOf(text)).toEqual({
      dir: '/srv/repo',
      files: ['/srv/repo/docs/guide.md', '/srv/repo/src/main.go'],
    });
  });

  it('counts the tool turns since the last user message', () => {
    const call = { role: 'assistant', content: null, tool_calls: [{ id: 'a' }] };
    expect(toolTurnsOf([{ role: 'user' }, call, { role: 'tool' }, call, { role: 'tool' }])).toBe(2);
    expect(toolTurnsOf([call, { role: 'tool' }, { role: 'assistant', content: 'done' }, { role: 'user' }])).toBe(0);
    // A reminder riding along with a tool result continues the task; a new question after a text answer does not.
    expect(
      toolTurnsOf([
        { role: 'user' },
        call,
        { role: 'tool' },
        { role: 'user' },
        call,
        { role: 'tool' },
        { role: 'user' },
        { role: 'system' },
      ]),
    ).toBe(2);
    expect(
      toolTurnsOf([
        { role: 'user' },
        call,
        { role: 'tool' },
        { role: 'assistant', content: 'x' },
        { role: 'user' },
        call,
        { role: 'tool' },
      ]),
    ).toBe(1);
  });
});

describe('agent loops over real sockets', () => {
  let worker: SimWorker;
  let other: SimWorker;
  let ws: { dir: string; files: string[] };
  beforeAll(async () => {
    ws = workspace();
    worker = await startSimWorker({
      model: 'sim',
      tokenizer: 'qwen3',
      seed: 11,
      // Rate 1: the prompt holds a random temp dir, so a rate below 1 would make the number of
      // tool turns (the assertions below) depend on that name. Rates below 1 are covered above.
      toolCallRate: 1,
      maxToolTurns: 3,
      workspaceRoots: [tmpdir()],
    });
    other = await startSimWorker({
      model: 'sim',
      tokenizer: 'qwen3',
      seed: 12,
      toolCallRate: 1,
      maxToolTurns: 3,
      workspaceRoots: [tmpdir()],
    });
  });
  afterAll(async () => {
    await worker?.close();
    await other?.close();
  });

  /** Runs an agent loop: execute read-only tool calls for real, stop at the first text answer. */
  async function loop(
    w: SimWorker,
    task: string,
    stream = false,
  ): Promise<{ turns: string[]; finish: string[]; usage: number[] }> {
    const client = new OpenAI({ baseURL: w.url + '/v1', apiKey: 'x', maxRetries: 0 });
    const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [
      { role: 'system', content: `You are a coding agent.\n<env>\nWorking directory: ${ws.dir}\n</env>` },
      { role: 'user', content: task },
    ];
    const turns: string[] = [];
    const finish: string[] = [];
    const usage: number[] = [];
    for (let i = 0; i < 10; i++) {
      let msg: OpenAI.Chat.ChatCompletionMessage;
      if (stream) {
        const s = client.chat.completions.stream({
          model: 'sim',
          messages,
          tools: AGENT_TOOLS,
          max_tokens: 32_768,
          stream_options: { include_usage: true },
        });
        const done = await s.finalChatCompletion();
        msg = done.choices[0].message;
        finish.push(done.choices[0].finish_reason);
        usage.push(done.usage?.completion_tokens ?? -1);
      } else {
        const r = await client.chat.completions.create({
          model: 'sim',
          messages,
          tools: AGENT_TOOLS,
          max_tokens: 32_768,
        });
        msg = r.choices[0].message;
        finish.push(r.choices[0].finish_reason);
        usage.push(r.usage?.completion_tokens ?? -1);
      }
      messages.push({ role: 'assistant', content: msg.content, tool_calls: msg.tool_calls });
      if (!msg.tool_calls?.length) {
        turns.push('text');
        break;
      }
      for (const c of msg.tool_calls) {
        const f = (c as { function: { name: string; arguments: string } }).function;
        const tool = AGENT_TOOLS.find((t) => t.function.name === f.name)!;
        const args = JSON.parse(f.arguments) as Record<string, unknown>;
        expect(ajv.compile(tool.function.parameters)(args)).toBe(true);
        expect(toolKind(f.name, tool.function.parameters)).not.toBe('other');
        if (f.name === 'read_file') expect(ws.files).toContain(args.absolute_path);
        turns.push(f.name);
        messages.push({ role: 'tool', tool_call_id: c.id, content: 'ok' });
      }
    }
    return { turns, finish, usage };
  }

  it('several tool turns, then a plain text answer with finish_reason stop under a 32k max_tokens', async () => {
    const runs = await Promise.all(
      ['Fix the bug in app.py', 'Explain the layout', 'Add a test', 'Rename X'].map((t) => loop(worker, t)),
    );
    for (const r of runs) {
      expect(r.turns[r.turns.length - 1]).toBe('text');
      // Three tool turns (the cap), then the text answer.
      expect(r.turns.length).toBe(4);
      expect(r.finish[r.finish.length - 1]).toBe('stop');
      expect(r.finish.slice(0, -1).every((f) => f === 'tool_calls')).toBe(true);
      expect(r.usage[r.usage.length - 1]).toBeLessThan(DEFAULT_MAX_OUTPUT + 1);
    }
    // Deterministic by seed: the same worker seed replays the same trajectory, streamed or not.
    expect(await loop(worker, 'Fix the bug in app.py', true)).toEqual(runs[0]);
    const others = await Promise.all(
      ['Fix the bug in app.py', 'Explain the layout', 'Add a test', 'Rename X'].map((t) => loop(other, t)),
    );
    // Another seed, another trajectory: tools and answer lengths (tool names alone, 5 safe tools
    // over 12 picks, coincide with probability 5^-12 whatever the temp dir's name).
    expect(others).not.toEqual(runs);
  });

  it('tool_choice none never calls, required always does (past the turn limit too)', async () => {
    const client = new OpenAI({ baseURL: worker.url + '/v1', apiKey: 'x', maxRetries: 0 });
    const call = {
      role: 'assistant' as const,
      content: null,
      tool_calls: [{ id: 'c1', type: 'function' as const, function: { name: 'glob', arguments: '{"pattern":"*"}' } }],
    };
    const past = [
      { role: 'user' as const, content: `cwd: ${ws.dir}` },
      ...Array.from({ length: 5 }, (_, i) => [
        { ...call, tool_calls: [{ ...call.tool_calls[0], id: `c${i}` }] },
        { role: 'tool' as const, tool_call_id: `c${i}`, content: 'x' },
      ]).flat(),
    ];
    for (let i = 0; i < 6; i++) {
      const q = [{ role: 'user' as const, content: `question ${i} in ${ws.dir}` }];
      const none = await client.chat.completions.create({
        model: 'sim',
        messages: q,
        tools: AGENT_TOOLS,
        tool_choice: 'none',
      });
      expect(none.choices[0].message.tool_calls ?? []).toEqual([]);
    }
    const req = await client.chat.completions.create({
      model: 'sim',
      messages: past,
      tools: AGENT_TOOLS,
      tool_choice: 'required',
    });
    expect(req.choices[0].finish_reason).toBe('tool_calls');
    const auto = await client.chat.completions.create({ model: 'sim', messages: past, tools: AGENT_TOOLS });
    expect(auto.choices[0].finish_reason).toBe('stop');
  });
});
