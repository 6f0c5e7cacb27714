// The pipeline's prompt token ids against the jinja interpreter's whole render, on every call of
// generated agent sessions that reach what the render shortcuts depend on: reasoning kept as
// `reasoning_content` or inline `<think>` (Qwen3 drops it from assistant turns before the last
// user query: a new query re-renders earlier turns), tool calls with and without text, tool outputs,
// new user queries mid-session, gateway-visible system turns, edits of earlier messages and rewound
// histories. The render-level property test (render-slim-window.test.ts) checks renderPrompt alone;
// this one checks what the pipeline sends routing and metrics (ids, through its per-session reuse,
// the ledger's notes and the sampled full-render check, which must not be what keeps it right).
import { describe, expect, it } from 'vitest';
import { createPipeline } from '../../middleware/pipeline.ts';
import { ChatRenderer } from '../../middleware/tokens/handle.ts';
import { loadTokenizer } from '../../middleware/tokens/registry.ts';
import type { ChatMessage, ChatRequest, PipelineContext } from '../../middleware/types.ts';
import { bashTools } from '../helpers/bash-tool.ts';

const tools = bashTools;

/** A seeded generator (LCG): the same sessions on every run. */
function rng(seed: number) {
  let s = seed >>> 0;
  return (n: number): number => {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    return (s >>> 8) % n;
  };
}

const TEXTS = ['ok', 'line one\nline two', 'ünï <b> 🙂', '', '  padded  ', 'a </think> b'];

/** One step of an agent session: the messages it appends. */
function step(r: (n: number) => number, k: number): ChatMessage[] {
  const t = () => TEXTS[r(TEXTS.length)];
  const id = `call_${k}`;
  const kind = r(10);
  const reasoning = r(3);
  const assistant: ChatMessage = { role: 'assistant', content: kind < 6 ? `I will run it. ${t()}` : null };
  if (reasoning === 1) assistant.reasoning_content = `I should run it. ${t()}`;
  else if (reasoning === 2 && assistant.content !== null)
    assistant.content = `<think>\nI should run it.\n</think>\n\n${assistant.content}`;
  if (kind < 8) {
    assistant.tool_calls = [{ id, type: 'function', function: { name: 'bash', arguments: `{"cmd":"ls ${k}"}` } }];
    return [assistant, { role: 'tool', tool_call_id: id, content: `out ${k} ${t()}\n`.repeat(1 + r(3)) }];
  }
  if (assistant.content === null) assistant.content = `done ${t()}`;
  // an answer, then the user's next query
  return [assistant, { role: 'user', content: r(2) ? `next: ${t()}` : [{ type: 'text', text: `parts ${t()}` }] }];
}

describe('pipeline ids equal the interpreter on reasoning sessions', () => {
  for (const tokenizer of ['qwen3', 'deepseek_v3', 'llama3_1']) {
    it(`${tokenizer}: every call of 12 seeded sessions (reasoning, new queries, edits, rewinds)`, async () => {
      const tok = await loadTokenizer(tokenizer);
      const interpreter = new ChatRenderer(tok.templateSource, tok.bosToken, tok.eosToken);
      const p = createPipeline({ model: 'm', tokenizer });
      let calls = 0;
      let wrong = 0;
      const firstWrong: string[] = [];
      for (let seed = 1; seed <= 12; seed++) {
        const r = rng(seed * 7919);
        const ctx = (i: number): PipelineContext => ({
          tenant: 't',
          requestId: `r${seed}-${i}`,
          headers: { 'x-session-id': `s${seed}` },
          model: 'm',
        });
        let history: ChatMessage[] = [
          ...(seed % 3 === 0 ? [] : [{ role: 'system', content: 'You are a coding agent.' } as ChatMessage]),
          { role: 'user', content: 'Fix the failing test.' },
        ];
        for (let i = 0; i < 24; i++) {
          const ev = r(12);
          if (ev === 0 && history.length > 6) {
            // a rewind: the agent drops its last turns and goes on from there
            history = history.slice(0, history.length - 2 - 2 * r(2));
          } else if (ev === 1 && history.length > 6) {
            // an edit of an earlier message (a client that rewrites its history)
            const j = 2 + r(history.length - 3);
            history = history.map((m, x) =>
              x === j && typeof m.content === 'string' ? { ...m, content: `${m.content} (edited)` } : m,
            );
          }
          history = [...history, ...step(r, seed * 100 + i)];
          const messages =
            r(4) === 0 ? [...history, { role: 'system', content: 'Reminder: be brief.' } as ChatMessage] : history;
          const req: ChatRequest = { model: 'm', messages: structuredClone(messages), tools };
          const res = await p.process(req, ctx(i));
          const ref = tok.encode(interpreter.interpret(res.body.messages, { tools: res.body.tools }));
          calls++;
          const got = Array.from(res.promptTokenIds!);
          if (got.length !== ref.length || got.some((x, k) => x !== ref[k])) {
            wrong++;
            if (firstWrong.length < 3) firstWrong.push(`session ${seed} call ${i}`);
          }
        }
      }
      expect(calls).toBe(12 * 24);
      expect({ wrong, firstWrong }).toEqual({ wrong: 0, firstWrong: [] });
    });
  }
});
