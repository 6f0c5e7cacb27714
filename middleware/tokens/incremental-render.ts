// Incremental chat-template rendering. Agents resend the whole history each call, and rendering a
// 100-message conversation through the jinja interpreter costs milliseconds, so when the previous
// call's messages are an unchanged prefix of this call's, only a window is rendered:
//   text = prevTextNoGen + (render(root ⊕ last K prev ⊕ new, gen) − render(root ⊕ last K prev, no gen))
// The window must render as a prefix of the extended window; otherwise (a template that re-renders
// earlier turns, e.g. Qwen3 dropping reasoning once a new query arrives, or grouping consecutive
// tool turns) the full template is rendered. The shortcut is verified against a full render on its
// first use per tokenizer/template and every VERIFY_EVERY calls after, and on the first
// VERIFY_FIRST_PER_KIND calls of each shape the templates' cross-message state reacts to (a new
// user turn, a gateway note right after an assistant turn, reasoning in the new messages): a fault
// confined to one shape (a window that kept reasoning Qwen3 drops after a new query went wrong on a
// fifth of some sessions' calls while the 1-in-64 sample met only right ones) shows within that
// shape's first calls. The check compares the prompt, its text without the generation prompt and
// the memo's stable text; one mismatch turns the shortcut off for that template.
// Two more savings, both checked the same way (first use per template, then every VERIFY_EVERY):
// - the window's own rendering (the `−` term) is the previous call's stable window text when the
//   window keeps its start, so it is not rendered again until the window exceeds MAX_WINDOW;
// - when the only message after the stable prefix is the gateway's trailing system note, the
//   stable rendering is the full one minus the note's probed wrapping (no third render).
// Templates whose cross-message state is known (Qwen3, DeepSeek-V3: slim-window.ts, recognised by
// SHA-256) drop the root and all but the last previous message, after stand-in messages that
// rebuild the state the earlier history left; the same prefix checks decide (b must extend a, c
// too), with the same verification. The generic window always holds a non-system turn, so state a
// template carries over system turns (DeepSeek's "right after tool outputs") is in it.
// Cost: usually one render of root + K..MAX_WINDOW + new messages instead of one of all messages;
// with a slim window one render of ~2–3 previous messages + the new ones, and no window text kept.
// Memory: a memo lives until the session's next call (~0.3 s under load: long enough to be copied
// by scavenges and promoted), so it holds no slice of this call's window rendering: the window
// text is kept packed in bytes (off the V8 heap) and the stable addition as its own copy (a slice
// would keep the whole ~15 kB rendering alive, and through textNoGen's chain, every call's).
import type { RenderOptions, TokenizerHandle } from './handle.ts';
import type { ChatMessage, ToolDef } from '../types.ts';
import { slimRuleFor } from './slim-window.ts';
import { hasPrefix, hasSuffix } from './text-prefix.ts';

/** Previous messages re-rendered as context for the new ones. */
export const WINDOW_MESSAGES = 4;
/** A full render cross-checks the shortcut every this many incremental renders. */
export const VERIFY_EVERY = 64;
/** Incremental renders of each shape (shapeOf) checked by a full render, per template and process,
 * before only the sample checks that shape: a constant cost per process. */
export const VERIFY_FIRST_PER_KIND = 8;
/** Shapes counted by shapeOf (bits). */
const SHAPES = 3;
/** Messages a reused window may grow to before it restarts WINDOW_MESSAGES back. */
export const MAX_WINDOW = 8;

export interface RenderMemo {
  hashes: string[];
  contextKey: string;
  textNoGen: string;
  /** Rendering (no generation prompt) of root ⊕ messages[start, hashes.length), packed. */
  window?: { start: number; text: PackedText };
  /** The last part appended to textNoGen (so its end can be read without flattening it). */
  lastPart?: string;
}

export interface RenderResult {
  text: string;
  textNoGen: string;
  memo: RenderMemo;
  mode: 'full' | 'incremental' | 'verified';
  /** Whether text begins with memo.textNoGen (decided on the small new parts when incremental). */
  stablePrefix: boolean;
  /**
   * text.slice(from), built from the parts when `from` lies in the newly rendered end: the prompt
   * is a concatenation of a ~100 kB history and a small tail, and slicing it whole would copy it.
   */
  sliceFrom(from: number): string;
}

/** A string's characters in bytes: one a character when all are ASCII, else UTF-16 code units
 *  (lossless, lone surrogates included). A plain Uint8Array, so it survives structured cloning. */
export interface PackedText {
  bytes: Uint8Array;
  latin1: boolean;
}

export function packText(s: string): PackedText {
  const latin1 = Buffer.byteLength(s, 'utf8') === s.length;
  return { bytes: Buffer.from(s, latin1 ? 'latin1' : 'utf16le'), latin1 };
}

export function unpackText(p: PackedText): string {
  const { bytes } = p;
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString(p.latin1 ? 'latin1' : 'utf16le');
}

/** A copy of s sharing no storage with the string it was sliced from (a flattened cons, re-sliced). */
function ownCopy(s: string): string {
  return s.length < 16 ? s : (' ' + s).slice(1);
}

interface TemplateHealth {
  used: number;
  /** Full-render checks made per shape (shapeOf's bits), up to VERIFY_FIRST_PER_KIND each. */
  shapeChecks: number[];
  /** First checks still to make, all shapes. */
  shapesLeft: number;
  broken: boolean;
  /** Deriving the stable text by cutting the trailing note off failed a check. */
  noteCutBroken: boolean;
}
const health = new WeakMap<TokenizerHandle, Map<string, TemplateHealth>>();
const genSuffixes = new WeakMap<TokenizerHandle, Map<string, string | null>>();
const noteWraps = new WeakMap<TokenizerHandle, Map<string, { head: string; tail: string } | null>>();

function healthOf(tok: TokenizerHandle, key: string): TemplateHealth {
  let m = health.get(tok);
  if (!m) health.set(tok, (m = new Map()));
  let h = m.get(key);
  if (!h)
    m.set(
      key,
      (h = {
        used: 0,
        shapeChecks: new Array<number>(SHAPES).fill(0),
        shapesLeft: SHAPES * VERIFY_FIRST_PER_KIND,
        broken: false,
        noteCutBroken: false,
      }),
    );
  return h;
}

/**
 * The shapes of a call's new messages (from `p`, the previous stable end) that templates carry
 * state across, as bits: 1 a new user turn (Qwen3 and DeepSeek's tools template drop earlier
 * reasoning after one), 2 a gateway note right after an assistant turn (rendered as the last
 * message before it), 4 reasoning in a new message (a reasoning field or an inline think block).
 * O(new messages).
 */
export function shapeOf(messages: readonly ChatMessage[], p: number, stableEnd: number): number {
  let bits = 0;
  for (let i = p; i < messages.length; i++) {
    const m = messages[i];
    if (i < stableEnd && m.role === 'user') bits |= 1;
    const r = m as { reasoning_content?: unknown; reasoning?: unknown };
    if (
      (typeof r.reasoning_content === 'string' && r.reasoning_content !== '') ||
      (typeof r.reasoning === 'string' && r.reasoning !== '') ||
      (m.role === 'assistant' && typeof m.content === 'string' && m.content.includes('<think>'))
    )
      bits |= 4;
  }
  if (stableEnd < messages.length && stableEnd > 0 && messages[stableEnd - 1].role === 'assistant') bits |= 2;
  return bits;
}

/** Whether this call's shapes still have first checks left (counting them); O(SHAPES). */
function firstOfShape(h: TemplateHealth, bits: number): boolean {
  let check = false;
  for (let k = 0; k < SHAPES; k++)
    if (bits & (1 << k) && h.shapeChecks[k] < VERIFY_FIRST_PER_KIND) {
      h.shapeChecks[k]++;
      h.shapesLeft--;
      check = true;
    }
  return check;
}

const assistantProbes = new WeakMap<TokenizerHandle, Map<string, boolean>>();

/** Whether an assistant turn renders the same when it is the last message as when a user turn follows. */
function lastAssistantStable(
  tok: TokenizerHandle,
  tools: ToolDef[] | undefined,
  extra: Record<string, unknown> | undefined,
  key: string,
): boolean {
  let m = assistantProbes.get(tok);
  if (!m) assistantProbes.set(tok, (m = new Map()));
  let ok = m.get(key);
  if (ok === undefined) {
    try {
      const base: ChatMessage[] = [
        { role: 'system', content: 'ctxgate-root' },
        { role: 'user', content: 'ctxgate-u1' },
        { role: 'assistant', content: 'ctxgate-a1' },
      ];
      const last = tok.renderChat(base, { tools, extra, addGenerationPrompt: false });
      const followed = tok.renderChat([...base, { role: 'user', content: 'ctxgate-u2' }], {
        tools,
        extra,
        addGenerationPrompt: false,
      });
      ok = hasPrefix(followed, last);
    } catch {
      ok = false;
    }
    m.set(key, ok);
  }
  return ok;
}

/**
 * What a trailing system message adds around its content (null when that is not a constant
 * wrapping: probed with two different notes after the same history).
 */
function noteWrap(
  tok: TokenizerHandle,
  tools: ToolDef[] | undefined,
  extra: Record<string, unknown> | undefined,
  key: string,
): { head: string; tail: string } | null {
  let m = noteWraps.get(tok);
  if (!m) noteWraps.set(tok, (m = new Map()));
  let w = m.get(key);
  if (w === undefined) {
    w = null;
    try {
      const base: ChatMessage[] = [
        { role: 'system', content: 'ctxgate-root' },
        { role: 'user', content: 'ctxgate-u1' },
        { role: 'assistant', content: 'ctxgate-a1' },
        { role: 'user', content: 'ctxgate-u2' },
      ];
      const noGen = tok.renderChat(base, { tools, extra, addGenerationPrompt: false });
      const wraps = ['ctxgate-note', 'two\nlines {{ }} <x>'].map((note) => {
        const t = tok.renderChat([...base, { role: 'system', content: note }], {
          tools,
          extra,
          addGenerationPrompt: false,
        });
        const at = t.lastIndexOf(note);
        return hasPrefix(t, noGen) && at >= noGen.length
          ? { head: t.slice(noGen.length, at), tail: t.slice(at + note.length) }
          : null;
      });
      if (wraps[0] && wraps[1] && wraps[0].head === wraps[1].head && wraps[0].tail === wraps[1].tail) w = wraps[0];
    } catch {
      w = null;
    }
    m.set(key, w);
  }
  return w;
}

/** The text add_generation_prompt appends (null when the template does not simply append). */
function genSuffix(
  tok: TokenizerHandle,
  tools: ToolDef[] | undefined,
  extra: Record<string, unknown> | undefined,
  key: string,
): string | null {
  let m = genSuffixes.get(tok);
  if (!m) genSuffixes.set(tok, (m = new Map()));
  let s = m.get(key);
  if (s === undefined) {
    const probe: ChatMessage[] = [{ role: 'user', content: 'ctxgate probe' }];
    const a = tok.renderChat(probe, { tools, extra, addGenerationPrompt: false });
    const b = tok.renderChat(probe, { tools, extra, addGenerationPrompt: true });
    s = hasPrefix(b, a) ? b.slice(a.length) : null;
    m.set(key, s);
  }
  return s;
}

/** The tools, template variables and tools JSON every render of a call passes (RenderOptions). */
type CallRender = Pick<RenderOptions, 'tools' | 'extra' | 'toolsJson'>;

function render(tok: TokenizerHandle, msgs: ChatMessage[], o: CallRender, gen: boolean): string {
  return tok.renderChat(msgs, { tools: o.tools, extra: o.extra, toolsJson: o.toolsJson, addGenerationPrompt: gen });
}

function fullRender(
  tok: TokenizerHandle,
  messages: ChatMessage[],
  o: CallRender,
  suffix: string | null,
): { text: string; textNoGen: string } {
  const text = render(tok, messages, o, true);
  const textNoGen =
    suffix !== null && hasSuffix(text, suffix)
      ? text.slice(0, text.length - suffix.length)
      : render(tok, messages, o, false);
  return { text, textNoGen };
}

// The functions below return anonymous closures: a named closure made per call (`const f = () =>`,
// `{ f: () => }`, an inner function) costs ~1 µs more under tsx, whose esbuild keepNames names each.

/** sliceFrom of an incremental result: text = base + added, base ending with `lastPart` from `partAt`. */
function partsSlicer(
  text: string,
  base: string,
  added: string,
  lastPart: string | undefined,
  partAt: number,
): (from: number) => string {
  return (from) =>
    from >= base.length
      ? added.slice(from - base.length)
      : from >= partAt && lastPart !== undefined
        ? lastPart.slice(from - partAt) + added
        : text.slice(from);
}

function textSlicer(text: string): (from: number) => string {
  return (from) => text.slice(from);
}

function fullResult(
  f: { text: string; textNoGen: string },
  stableText: string,
  stableHashes: string[],
  contextKey: string,
): RenderResult {
  // No window memo: the next call renders its window afresh.
  return {
    ...f,
    memo: { hashes: stableHashes, contextKey, textNoGen: stableText },
    mode: 'full',
    stablePrefix: hasPrefix(f.text, stableText),
    sliceFrom: textSlicer(f.text),
  };
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
  opts: CallRender & { contextKey: string },
  memo: RenderMemo | undefined,
): RenderResult {
  const { tools, extra, contextKey } = opts;
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
    // A memo ending on an assistant turn rendered it as the last message, which some templates mark
    // (Qwen3 adds an empty think block) in ways a window without the user query cannot see.
    (messages[p - 1].role !== 'assistant' || lastAssistantStable(tok, tools, extra, contextKey)) &&
    memo.hashes.every((x, i) => x === hashes[i]);
  // A template with known state (slim-window.ts): its slim window, or null where only a full
  // render is exact.
  const rule = usable ? slimRuleFor(tok) : undefined;
  const slimMsgs = rule !== undefined ? rule(messages, p) : undefined;
  if (usable && slimMsgs !== null) {
    // A window of system turns only would start a template's per-turn state afresh where the whole
    // prompt carries it over them (DeepSeek's "right after tool outputs"): it reaches back at least
    // to the last other turn. O(trailing system turns).
    let anchor = p - 1;
    while (anchor > rootEnd && messages[anchor].role === 'system') anchor--;
    const keep =
      memo.window !== undefined &&
      memo.window.start >= rootEnd &&
      memo.window.start <= anchor &&
      p - memo.window.start <= MAX_WINDOW;
    const slim = slimMsgs !== undefined;
    const start = keep ? memo.window!.start : Math.min(anchor, Math.max(rootEnd, p - WINDOW_MESSAGES));
    const windowMsgs = slimMsgs ?? messages.slice(0, rootEnd).concat(messages.slice(start, p));
    // The slim window has no root: it renders without the tools (they only shape the root there).
    const wo: CallRender = slim ? { tools: undefined, extra: opts.extra, toolsJson: undefined } : opts;
    const a = slim
      ? render(tok, windowMsgs, wo, false)
      : keep
        ? unpackText(memo.window!.text)
        : render(tok, windowMsgs, wo, false);
    const extended = windowMsgs.concat(messages.slice(p));
    const b = render(tok, extended, wo, true);
    // A template that adds no generation prompt after some turns (DeepSeek after tool outputs, the
    // usual end of an agent's call) does not end b with the probed one: its rendering without the
    // prompt is rendered too (a small window), and what b adds to that is this call's prompt.
    const bNo = hasSuffix(b, suffix) ? undefined : render(tok, extended, wo, false);
    const genOk = bNo === undefined || (hasPrefix(b, bNo) && hasPrefix(bNo, a));
    const genLen = bNo === undefined ? suffix.length : b.length - bNo.length;
    const checkNow = h.used % VERIFY_EVERY === 0;
    let c: string | undefined;
    let cut = false;
    if (stableEnd === messages.length) c = genOk ? b.slice(0, b.length - genLen) : bNo;
    // The cut leaves the last stable message rendered as followed by the note: the stable text only
    // when that message renders the same as the last one (an assistant turn may not: Qwen3).
    else if (
      !h.noteCutBroken &&
      (messages[stableEnd - 1].role !== 'assistant' || lastAssistantStable(tok, tools, extra, contextKey))
    )
      cut = (c = cutNote(b, messages, stableEnd, suffix, noteWrap(tok, tools, extra, contextKey))) !== undefined;
    if (c === undefined || (cut && checkNow)) {
      const real = render(tok, windowMsgs.concat(messages.slice(p, stableEnd)), wo, false);
      if (cut && real !== c) h.noteCutBroken = true;
      c = real;
    }
    if (genOk && hasPrefix(b, a) && hasPrefix(c!, a)) {
      const base = memo.textNoGen;
      const added = b.slice(a.length);
      const stableAdded = ownCopy(c.slice(a.length));
      const text = base + added;
      // Where memo.lastPart starts in `base`: slices from there on avoid flattening `base`.
      const partAt = memo.lastPart !== undefined ? base.length - memo.lastPart.length : base.length;
      const result: RenderResult = {
        text,
        textNoGen: base + added.slice(0, added.length - genLen),
        memo: {
          hashes: stableHashes,
          contextKey,
          textNoGen: base + stableAdded,
          // A slim window is rendered afresh each call (two messages): nothing to keep.
          window: slim ? undefined : { start, text: packText(c) },
          lastPart: stableAdded,
        },
        mode: 'incremental',
        stablePrefix: hasPrefix(added, stableAdded),
        sliceFrom: partsSlicer(text, base, added, memo.lastPart, partAt),
      };
      const sampled = h.used++ % VERIFY_EVERY === 0;
      // once every shape had its first checks (the usual state), no shape is computed
      const first = h.shapesLeft > 0 && firstOfShape(h, shapeOf(messages, p, stableEnd));
      if (first || sampled) {
        const full = fullRender(tok, messages, opts, suffix);
        // The memo's stable text is checked where it comes with the full render (no trailing note)
        // and on the first calls of a shape; the sample alone does not pay a third render for it.
        const stable =
          stableEnd === messages.length
            ? full.textNoGen
            : first
              ? render(tok, messages.slice(0, stableEnd), opts, false)
              : undefined;
        if (
          full.text !== text ||
          full.textNoGen !== result.textNoGen ||
          (stable !== undefined && stable !== result.memo.textNoGen)
        ) {
          h.broken = true;
          return fullResult(
            full,
            stable ?? render(tok, messages.slice(0, stableEnd), opts, false),
            stableHashes,
            contextKey,
          );
        }
        result.mode = 'verified';
      }
      return result;
    }
  }
  const full = fullRender(tok, messages, opts, suffix);
  return fullResult(
    full,
    stableEnd === messages.length ? full.textNoGen : render(tok, messages.slice(0, stableEnd), opts, false),
    stableHashes,
    contextKey,
  );
}

/** b without its generation prompt and the single trailing system note (undefined when not so). */
function cutNote(
  b: string,
  messages: ChatMessage[],
  stableEnd: number,
  suffix: string,
  wrap: { head: string; tail: string } | null,
): string | undefined {
  if (!wrap || stableEnd !== messages.length - 1) return undefined;
  const note = messages[stableEnd];
  if (note.role !== 'system' || typeof note.content !== 'string') return undefined;
  const tail = wrap.head + note.content + wrap.tail + suffix;
  return hasSuffix(b, tail) ? b.slice(0, b.length - tail.length) : undefined;
}
