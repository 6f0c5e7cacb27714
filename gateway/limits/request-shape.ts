// Per-request bounds checked before any rendering, tokenising or upstream work, on the canonical
// body every ingress produces: the prompt's size in characters (limits.max_prompt_chars, 413), and
// the shape of `tools` and tool calls (a malformed schema would make the worker answer 5xx, so it
// is the request's 400, naming the field, before any worker sees it). O(prompt) with early exit.
import { GatewayError } from '../../middleware/errors.ts';
import { ToolNames } from '../ingress/tool-names.ts';

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

function textChars(v: unknown): number {
  if (typeof v === 'string') return v.length;
  if (Array.isArray(v)) {
    let n = 0;
    for (const p of v)
      n += isObject(p) && typeof p.text === 'string' ? p.text.length : typeof p === 'string' ? p.length : 0;
    return n;
  }
  return 0;
}

/** Characters of prompt text: message contents, reasoning, tool-call arguments, or the completions prompt. */
export function promptChars(body: Record<string, unknown>, limit: number): number {
  let n = 0;
  if (Array.isArray(body.messages)) {
    for (const m of body.messages as Record<string, unknown>[]) {
      if (!isObject(m)) continue;
      n += textChars(m.content) + textChars(m.reasoning_content);
      if (Array.isArray(m.tool_calls))
        for (const c of m.tool_calls) if (isObject(c) && isObject(c.function)) n += textChars(c.function.arguments);
      if (n > limit) return n;
    }
  } else n += textChars(body.prompt);
  return n;
}

// The field paths of the errors are written only when one is thrown: the checks run over every
// tool call of the history on every call (plain loops, no closure or string per item).

function checkTools(tools: unknown): void {
  if (tools === undefined || tools === null) return;
  if (!Array.isArray(tools))
    throw new GatewayError('invalid_request', "'tools' must be an array of tool objects", 'tools');
  const names = new ToolNames();
  for (let i = 0; i < tools.length; i++) {
    const t: unknown = tools[i];
    if (!isObject(t)) throw toolError(i, '', 'must be an object');
    if (typeof t.type !== 'string') throw toolError(i, '.type', 'must be a string');
    if (t.type !== 'function') continue; // other tool kinds are the engine's to judge
    const f = t.function;
    if (!isObject(f)) throw toolError(i, '.function', 'must be an object');
    names.check(f.name, i, 'function.name');
    if (f.description !== undefined && typeof f.description !== 'string')
      throw toolError(i, '.function.description', 'must be a string');
    if (f.parameters !== undefined && !isObject(f.parameters))
      throw toolError(i, '.function.parameters', 'must be a JSON Schema object');
  }
}

function toolError(i: number, field: string, what: string): GatewayError {
  const at = `tools[${i}]${field}`;
  return new GatewayError('invalid_request', `${at} ${what}`, at);
}

function checkToolCalls(messages: unknown): void {
  if (!Array.isArray(messages)) return;
  for (let i = 0; i < messages.length; i++) {
    const m: unknown = messages[i];
    if (!isObject(m) || !Array.isArray(m.tool_calls)) continue;
    const calls: unknown[] = m.tool_calls;
    for (let j = 0; j < calls.length; j++) {
      const c = calls[j];
      if (!isObject(c) || !isObject(c.function)) throw callError(i, j, '.function', 'must be an object');
      if (typeof c.function.name !== 'string') throw callError(i, j, '.function.name', 'must be a string');
      if (c.function.arguments !== undefined && typeof c.function.arguments !== 'string')
        throw callError(i, j, '.function.arguments', 'must be a JSON string');
    }
  }
}

function callError(i: number, j: number, field: string, what: string): GatewayError {
  const at = `messages[${i}].tool_calls[${j}]${field}`;
  return new GatewayError('invalid_messages', `${at} ${what}`, at);
}

export function checkRequestShape(body: Record<string, unknown>, maxPromptChars: number): void {
  checkTools(body.tools);
  checkToolCalls(body.messages);
  const n = promptChars(body, maxPromptChars);
  if (n > maxPromptChars)
    throw new GatewayError(
      'prompt_too_large',
      `the prompt has more than ${maxPromptChars} characters (limits.max_prompt_chars)`,
      Array.isArray(body.messages) ? 'messages' : 'prompt',
    );
}
