// Incremental chat-template rendering. Agents resend the whole history each call, and rendering a
// 100-message conversation through the jinja interpreter costs milliseconds, so when the previous
// call's messages are an unchanged prefix of this call's, only a window is rendered:
//   text = prevTextNoGen + (render(root ⊕ last K prev ⊕ new, gen) − render(root ⊕ last K prev, no gen))
// The window must render as a prefix of the extended window; otherwise (a template that re-renders
// earlier turns, e.g. Qwen3 dropping reasoning once a new query arrives, or grouping consecutive
// tool turns) the full template is rendered. The shortcut is verified against a full render on its
// first use per tokenizer/template and every VERIFY_EVERY calls after; one mismatch turns it off for
// that template. Cost: two renders of ~K+root messages instead of one of all messages.
import type { TokenizerHandle } from './handle.ts';
import type { ChatMessage, ToolDef } from '../types.ts';

/** Previous messages re-rendered as context for the new ones. */
export const WINDOW_MESSAGES = 8;
/** A full render cross-checks the shortcut every this many incremental renders. */
export const VERIFY_EVERY = 64;

export interface RenderMemo {
  hashes: string[];
  contextKey: string;
  textNoGen: string;
}

export interface RenderResult {
  text: string;
  textNoGen: string;
  memo: RenderMemo;
  mode: 'full' | 'incremental' | 'verified';
}

interface TemplateHealth {
  used: number;
  broken: boolean;
}
const health = new WeakMap<TokenizerHandle, Map<string, TemplateHealth>>();
const genSuffixes = new WeakMap<TokenizerHandle, Map<string, string | null>>();

function healthOf(tok: TokenizerHandle, key: string): TemplateHealth {
  let m = health.get(tok);
  if (!m) health.set(tok, (m = new Map()));
  let h = m.get(key);
  if (!h) m.set(key, (h = { used: 0, broken: false }));
  return h;
}

/** The text add_generation_prompt appends (null when the template does not simply append). */
function genSuffix(tok: TokenizerHandle, tools: ToolDef[] | undefined, extra: Record<string, unknown> | undefined, key: string): string | null {
  let m = genSuffixes.get(tok);
  if (!m) genSuffixes.set(tok, (m = new Map()));
  let s = m.get(key);
  if (s === undefined) {
    const probe: ChatMessage[] = [{ role: 'user', content: 'ctxgate probe' }];
    const a = tok.renderChat(probe, { tools, extra, addGenerationPrompt: false });
    const b = tok.renderChat(probe, { tools, extra, addGenerationPrompt: true });
    s = b.startsWith(a) ? b.slice(a.length) : null;
    m.set(key, s);
  }
  return s;
}

function fullRender(tok: TokenizerHandle, messages: ChatMessage[], tools: ToolDef[] | undefined, extra: Record<string, unknown> | undefined, suffix: string | null): { text: string; textNoGen: string } {
  const text = tok.renderChat(messages, { tools, extra, addGenerationPrompt: true });
  const textNoGen = suffix !== null && text.endsWith(suffix) ? text.slice(0, text.length - suffix.length) : tok.renderChat(messages, { tools, extra, addGenerationPrompt: false });
  return { text, textNoGen };
}

/**
 * Renders `messages` as the engine would (generation prompt included). `stableEnd` is the length of
 * the prefix that the next call will resend unchanged (everything but this call's gateway note);
 * the returned memo covers exactly that prefix, so the next call can extend it.
 */
export function renderPrompt(
  tok: TokenizerHandle,
  messages: ChatMessage[],
  hashes: string[],
  rootEnd: number,
  stableEnd: number,
  opts: { tools?: ToolDef[]; extra?: Record<string, unknown>; contextKey: string },
  memo: RenderMemo | undefined,
): RenderResult {
  const { tools, extra, contextKey } = opts;
  const r = (msgs: ChatMessage[], gen: boolean): string => tok.renderChat(msgs, { tools, extra, addGenerationPrompt: gen });
  const suffix = genSuffix(tok, tools, extra, contextKey);
  const p = memo?.hashes.length ?? 0;
  const h = healthOf(tok, tok.templateSource);
  const stableHashes = hashes.slice(0, stableEnd);
  const usable =
    memo !== undefined &&
    !h.broken &&
    suffix !== null &&
    memo.contextKey === contextKey &&
    p > rootEnd &&
    stableEnd >= p &&
    messages.length > p &&
    memo.hashes.every((x, i) => x === hashes[i]);
  if (usable) {
    const start = Math.max(rootEnd, p - WINDOW_MESSAGES);
    const windowMsgs = messages.slice(0, rootEnd).concat(messages.slice(start, p));
    const a = r(windowMsgs, false);
    const b = r(windowMsgs.concat(messages.slice(p)), true);
    const c = stableEnd === messages.length ? b.slice(0, b.length - suffix.length) : r(windowMsgs.concat(messages.slice(p, stableEnd)), false);
    if (b.startsWith(a) && c.startsWith(a) && b.endsWith(suffix)) {
      const text = memo.textNoGen + b.slice(a.length);
      const result: RenderResult = {
        text,
        textNoGen: text.slice(0, text.length - suffix.length),
        memo: { hashes: stableHashes, contextKey, textNoGen: memo.textNoGen + c.slice(a.length) },
        mode: 'incremental',
      };
      if (h.used++ % VERIFY_EVERY === 0) {
        const full = fullRender(tok, messages, tools, extra, suffix);
        if (full.text !== text) {
          h.broken = true;
          return fullResult(full, stableEnd === messages.length ? full.textNoGen : r(messages.slice(0, stableEnd), false));
        }
        result.mode = 'verified';
      }
      return result;
    }
  }
  const full = fullRender(tok, messages, tools, extra, suffix);
  return fullResult(full, stableEnd === messages.length ? full.textNoGen : r(messages.slice(0, stableEnd), false));

  function fullResult(f: { text: string; textNoGen: string }, stableText: string): RenderResult {
    return { ...f, memo: { hashes: stableHashes, contextKey, textNoGen: stableText }, mode: 'full' };
  }
}
