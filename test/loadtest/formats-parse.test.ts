import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { parseAiderHistory } from '../../loadtest/formats/aider.ts';
import { parseMiniSweTraj } from '../../loadtest/formats/mini-swe-agent.ts';
import { readSessions } from '../../loadtest/formats/read-sessions.ts';
import { formatRequestLine } from '../../loadtest/formats/request-stream.ts';
import { parseSweAgentTraj } from '../../loadtest/formats/swe-agent.ts';
import { FIXTURE_TRAJECTORIES as FIXTURES } from '../fixtures/trajectories.ts';
import { useTempDirs } from '../helpers/temp-dirs.ts';

const tempDir = useTempDirs();

const bashTool = { type: 'function', function: { name: 'bash', parameters: { type: 'object' } } };
const call = (id: string, cmd: string) => ({
  id,
  type: 'function',
  index: 0,
  function: { name: 'bash', arguments: JSON.stringify({ command: cmd }) },
});
const usage = (p: number, c: number) => ({
  response: { usage: { prompt_tokens: p, completion_tokens: 7, prompt_tokens_details: { cached_tokens: c } } },
});

const miniDoc = {
  info: { config: { model: { model_name: 'deepseek/deepseek-chat', model_kwargs: { temperature: 0 } } } },
  instance_id: 'x',
  messages: [
    { role: 'system', content: 'sys', extra: {} },
    { role: 'user', content: 'task', extra: {} },
    { role: 'assistant', content: 'a1', tool_calls: [call('c1', 'ls')], function_call: null, extra: usage(100, 0) },
    {
      role: 'tool',
      tool_call_id: 'c1',
      content: '<returncode>0</returncode><output>x</output>',
      extra: { returncode: 0 },
    },
    { role: 'assistant', content: 'a2', tool_calls: [call('c2', 'cat x')], extra: usage(150, 96) },
    { role: 'tool', tool_call_id: 'c2', content: 'out', extra: {} },
    { role: 'exit', content: 'diff', extra: {} },
  ],
};

describe('mini-swe-agent', () => {
  it('one call per assistant message, history before it, extra removed, tools and usage', () => {
    const s = parseMiniSweTraj(miniDoc, '/x/run.traj.json', [bashTool]);
    expect(s.id).toBe('run');
    expect(s.calls).toHaveLength(2);
    const [a, b] = s.calls;
    expect(a.body.model).toBe('deepseek/deepseek-chat');
    expect(a.body.tools).toEqual([bashTool]);
    expect(a.body.messages.map((m) => m.role)).toEqual(['system', 'user']);
    expect(b.body.messages.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool']);
    expect(b.body.messages[3].tool_call_id).toBe('c1');
    expect(b.body.messages[2].tool_calls?.[0].id).toBe('c1');
    for (const m of b.body.messages) {
      expect(m).not.toHaveProperty('extra');
      expect(m).not.toHaveProperty('function_call');
    }
    expect(a.recordedUsage).toEqual({ prompt_tokens: 100, cached_tokens: 0, completion_tokens: 7 });
    expect(b.recordedUsage?.cached_tokens).toBe(96);
    expect(JSON.stringify(s.calls)).not.toContain('"exit"');
  });
});

describe('swe-agent', () => {
  it('maps tool_call_ids to tool_call_id and drops bookkeeping keys', () => {
    const doc = {
      history: [
        { role: 'system', content: 'SETTING', agent: 'main', message_type: 'system_prompt' },
        { role: 'user', content: 'issue', agent: 'main' },
        {
          role: 'assistant',
          content: 't1',
          thought: 't1',
          action: 'ls',
          tool_calls: [call('k1', 'ls')],
          message_type: 'action',
        },
        { role: 'tool', content: 'files', tool_call_ids: ['k1'], message_type: 'observation' },
        { role: 'assistant', content: 't2', thought: 't2', action: 'submit', tool_calls: [call('k2', 'submit')] },
        { role: 'tool', content: 'diff', tool_call_ids: ['k2'] },
      ],
      replay_config: JSON.stringify({ agent: { model: { name: 'gpt-4o' } } }),
    };
    const s = parseSweAgentTraj(doc, 'a/b.traj');
    expect(s.calls).toHaveLength(2);
    const last = s.calls[1].body;
    expect(last.model).toBe('gpt-4o');
    expect(last.messages).toEqual([
      { role: 'system', content: 'SETTING' },
      { role: 'user', content: 'issue' },
      { role: 'assistant', content: 't1', tool_calls: [call('k1', 'ls')] },
      { role: 'tool', content: 'files', tool_call_id: 'k1' },
    ]);
  });
  it('keeps observations that sit in user messages', () => {
    const doc = {
      history: [
        { role: 'system', content: 's' },
        { role: 'user', content: 'issue' },
        { role: 'assistant', content: 'ls', action: 'ls' },
        { role: 'user', content: 'a.py\nb.py' },
        { role: 'assistant', content: 'submit' },
      ],
    };
    const s = parseSweAgentTraj(doc, 'x.traj');
    expect(s.calls[1].body.messages.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'user']);
    expect(s.calls[1].body.messages[3].content).toBe('a.py\nb.py');
  });
});

describe('aider', () => {
  it('one call per TO LLM block, role runs and separators split messages, responses ignored', () => {
    const text = [
      'TO LLM 2025-01-31T11:21:36',
      '-------',
      'SYSTEM Act as an expert.',
      'SYSTEM ',
      'SYSTEM Be brief.',
      '-------',
      'USER here are files',
      'USER',
      '-------',
      'ASSISTANT Ok.',
      '-------',
      'USER fix it',
      'LLM RESPONSE 2025-01-31T11:21:41',
      'ASSISTANT done',
      'TO LLM 2025-01-31T11:23:00',
      '-------',
      'SYSTEM Act as an expert.',
      'USER again',
      '',
    ].join('\n');
    const s = parseAiderHistory(text, 'p/.aider.llm.history');
    expect(s.calls).toHaveLength(2);
    expect(s.calls[0].body.messages).toEqual([
      { role: 'system', content: 'Act as an expert.\n\nBe brief.' },
      { role: 'user', content: 'here are files\n' },
      { role: 'assistant', content: 'Ok.' },
      { role: 'user', content: 'fix it' },
    ]);
    expect(s.calls[1].body.messages.map((m) => m.role)).toEqual(['system', 'user']);
  });
});

describe('request stream and readSessions', () => {
  it('reads .jsonl and .jsonl.gz from a folder, strips _meta, keeps recorded usage', async () => {
    const dir = tempDir('fmt-');
    const b1 = { model: 'm', messages: [{ role: 'user', content: 'hi' }] };
    const b2 = {
      model: 'm',
      messages: [
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: 'yo' },
        { role: 'user', content: 'more' },
      ],
    };
    const text =
      formatRequestLine(b1, {
        session: 'sess-A',
        turn: 0,
        recorded_usage: { prompt_tokens: 5, cached_tokens: 0, completion_tokens: 1 },
      }) + formatRequestLine(b2, { session: 'sess-A', turn: 1 });
    writeFileSync(join(dir, 'a.jsonl'), text);
    writeFileSync(join(dir, 'b.jsonl.gz'), gzipSync(formatRequestLine(b1, {})));
    writeFileSync(join(dir, 'notes.txt'), 'ignored');
    const ss = await readSessions([dir]);
    expect(ss.map((s) => s.id)).toEqual(['sess-A', 'b']);
    expect(ss[0].calls[0].body).toEqual(b1);
    expect(ss[0].calls[1].body).toEqual(b2);
    expect(ss[0].calls[0].recordedUsage?.prompt_tokens).toBe(5);
    expect(ss[0].calls[1].recordedUsage).toBeUndefined();
    expect(ss[1].calls).toHaveLength(1);
  });

  it('reads a recorded mini-swe-agent run with its bash tool and usage (gzipped fixture)', async () => {
    const [s] = await readSessions([
      join(FIXTURES, 'mini-swe-agent/deepseek_chat_test_1-100_django__django-14752.traj.json.gz'),
    ]);
    expect(s.id).toBe('deepseek_chat_test_1-100_django__django-14752');
    expect(s.calls).toHaveLength(31);
    expect(s.calls[0].body.tools?.[0].function.name).toBe('bash');
    const withUsage = s.calls.filter((c) => c.recordedUsage).length;
    expect(withUsage).toBe(s.calls.length);
    // append-only: each call extends the previous one by the previous reply and its tool output
    for (let i = 1; i < s.calls.length; i++) {
      const prev = s.calls[i - 1].body.messages;
      expect(s.calls[i].body.messages.slice(0, prev.length)).toEqual(prev);
    }
  });
});

describe('recorded runs of other agents (excerpts under test/fixtures/trajectories)', () => {
  it('aider history: one call per TO LLM block, each opening with the system prompt', async () => {
    const [s] = await readSessions([join(FIXTURES, 'aider')]);
    expect(s.calls).toHaveLength(3);
    for (const c of s.calls) {
      expect(c.body.messages[0].role).toBe('system');
      expect(c.body.messages[c.body.messages.length - 1].role).toBe('user');
    }
  });
  it('SWE-agent function calling: every tool result answers a preceding tool call', async () => {
    const [s] = await readSessions([join(FIXTURES, 'swe-agent/function_calling_simple.traj')]);
    expect(s.calls).toHaveLength(5);
    const last = s.calls[4].body.messages;
    expect(last.map((m) => m.role)).toEqual([
      'system',
      'user',
      'assistant',
      'tool',
      'assistant',
      'tool',
      'assistant',
      'tool',
      'assistant',
      'tool',
    ]);
    for (let i = 0; i < last.length; i++) {
      if (last[i].role !== 'tool') continue;
      expect(last[i].tool_call_id).toBe(last[i - 1].tool_calls?.[0].id);
      expect(Object.keys(last[i]).sort()).toEqual(['content', 'role', 'tool_call_id']);
    }
  });
});
