// Frames gateway notes so untrusted text cannot forge them: every note ctxgate writes starts with
// FRAME_MARKER, and any look-alike of the marker inside text the agent sent is replaced by the
// escaped form (a zero-width space before the bracket) before it reaches the model.
// Look-alikes are found after folding: NFKC (fullwidth `［ｃｔｘｇａｔｅ］`, mathematical letters),
// a confusables map (Cyrillic/Greek letters that render like c t x g a e, bracket variants),
// invisible characters and whitespace dropped, case ignored. Cost: O(n) — native pre-checks (any
// bracket-like character; in ASCII text, any look-alike at all), then one pass over candidate
// spans of at most MAX_INNER characters.
// escapeRequest() is the one place that applies it to a request: every role, content string and
// text part, reasoning, tool-call names and arguments, and tool definitions (names, descriptions,
// every string and key of the schema: a tool description from an MCP server is untrusted too).
import type { ChatMessage, ChatRequest, ContentPart, ToolCall, ToolDef } from '../types.ts';

export const FRAME_MARKER = '[ctxgate]';
const ESCAPED = '[ctxgate\u200b]';
const WORD = 'ctxgate';
/** Longest bracketed span inspected: room for the word padded with invisibles and spaces. */
const MAX_INNER = 64;

const OPEN = '\\[\uff3b\u27e6\u301a\u3010\u2045\u2772\ufe5d\u3014\u2983\u298b\u3018\u2e22\u23a1';
const CLOSE = '\\]\uff3d\u27e7\u301b\u3011\u2046\u2773\ufe5e\u3015\u2984\u298c\u3019\u2e23\u23a4';
const HAS_OPEN = new RegExp(`[${OPEN}]`);
const CANDIDATE = new RegExp(`[${OPEN}]([^\\n${OPEN}${CLOSE}]{1,${MAX_INNER}})[${CLOSE}]`, 'g');
/** Invisible or spacing characters an attacker can pad the word with. */
const INVISIBLE =
  // biome-ignore lint/suspicious/noMisleadingCharacterClass: the class lists invisible code points one by one (combining ones on purpose), it matches no sequence
  /[\s\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0]/gu;

/** Letters that render like the ones in `ctxgate` (after NFKC and lower-casing). */
const CONFUSABLE: Record<string, string> = {
  '\u0441': 'c',
  '\u03f2': 'c',
  '\u1d04': 'c',
  '\u217d': 'c',
  '\u0188': 'c',
  '\u0442': 't',
  '\u03c4': 't',
  '\u1d1b': 't',
  '\u01ab': 't',
  '\u0445': 'x',
  '\u03c7': 'x',
  '\u00d7': 'x',
  '\u2179': 'x',
  '\u1541': 'x',
  '\u0261': 'g',
  '\u0581': 'g',
  '\u050d': 'g',
  '\u0262': 'g',
  '\u01e5': 'g',
  '\u0430': 'a',
  '\u03b1': 'a',
  '\u0251': 'a',
  '\u1d00': 'a',
  '\u0435': 'e',
  '\u03b5': 'e',
  '\u04bd': 'e',
  '\u212e': 'e',
  '\u1d07': 'e',
  '\u0454': 'e',
};

/** The word a bracketed span reads as: NFKC, lower case, confusables mapped, invisibles dropped. */
export function foldMarkerText(s: string): string {
  let out = '';
  for (const ch of s.normalize('NFKC').toLowerCase().replace(INVISIBLE, '')) out += CONFUSABLE[ch] ?? ch;
  return out;
}

/** Any character outside ASCII: look-alikes then need the full fold. */
const NON_ASCII = /[^\x00-\x7f]/;
/** In ASCII text the fold is only lower-casing and dropping spaces and tabs (NFKC, the confusables
 * and the other invisibles are all outside ASCII), so a span that folds to the word reads as this. */
const ASCII_LOOKALIKE =
  /\[[\t\v\f\r ]*c[\t\v\f\r ]*t[\t\v\f\r ]*x[\t\v\f\r ]*g[\t\v\f\r ]*a[\t\v\f\r ]*t[\t\v\f\r ]*e[\t\v\f\r ]*\]/i;

export function escapeFrame(text: string): string {
  if (!HAS_OPEN.test(text)) return text;
  // Code and logs are full of brackets: an ASCII text with no look-alike is left as it is without
  // folding every bracketed span (a necessary condition of any replacement, so exact).
  if (!ASCII_LOOKALIKE.test(text) && !NON_ASCII.test(text)) return text;
  return text.replace(CANDIDATE, (m, inner: string) => (foldMarkerText(inner) === WORD ? ESCAPED : m));
}

/** Marker look-alikes in `text` that are not the escaped form (0 after escapeFrame). */
export function countUnescapedMarkers(text: string): number {
  let n = 0;
  if (!HAS_OPEN.test(text)) return 0;
  for (const m of text.matchAll(CANDIDATE)) if (m[0] !== ESCAPED && foldMarkerText(m[1]) === WORD) n++;
  return n;
}

/** A gateway note line; the body is escaped so it cannot nest a second marker. */
export function frameNote(body: string): string {
  return `${FRAME_MARKER} ${escapeFrame(body)}`;
}

export function isFramedNote(line: string): boolean {
  return line.startsWith(FRAME_MARKER);
}

function escapeParts(parts: ContentPart[]): ContentPart[] {
  let changed = false;
  const out = parts.map((p) => {
    if (!p || typeof p.text !== 'string') return p;
    const esc = escapeFrame(p.text);
    if (esc === p.text) return p;
    changed = true;
    return { ...p, text: esc };
  });
  return changed ? out : parts;
}

function escapeCalls(calls: ToolCall[]): ToolCall[] {
  let changed = false;
  const out = calls.map((c) => {
    const f = c?.function;
    if (!f || typeof f !== 'object') return c;
    const name = typeof f.name === 'string' ? escapeFrame(f.name) : f.name;
    const args = typeof f.arguments === 'string' ? escapeFrame(f.arguments) : f.arguments;
    if (name === f.name && args === f.arguments) return c;
    changed = true;
    return { ...c, function: { ...f, name, arguments: args } };
  });
  return changed ? out : calls;
}

/** One message with every untrusted text escaped; the same object when nothing changed. */
export function escapeMessage(m: ChatMessage): ChatMessage {
  let out = m;
  if (typeof m.content === 'string') out = withField(m, out, 'content', escapeFrame(m.content));
  else if (Array.isArray(m.content)) out = withField(m, out, 'content', escapeParts(m.content));
  if (typeof m.reasoning_content === 'string')
    out = withField(m, out, 'reasoning_content', escapeFrame(m.reasoning_content));
  if (typeof m.reasoning === 'string') out = withField(m, out, 'reasoning', escapeFrame(m.reasoning));
  if (typeof m.name === 'string') out = withField(m, out, 'name', escapeFrame(m.name));
  if (Array.isArray(m.tool_calls)) out = withField(m, out, 'tool_calls', escapeCalls(m.tool_calls));
  return out;
}

/** `out` (m, or m's copy) with field k set to v when v differs from m's own: m copied at the first
 * change. A module function, not a closure made per message: tsx (esbuild keepNames) names every
 * `const f = () =>` it makes, a defineProperty each time. */
function withField<K extends keyof ChatMessage>(
  m: ChatMessage,
  out: ChatMessage,
  k: K,
  v: ChatMessage[K],
): ChatMessage {
  if (v === m[k]) return out;
  const o = out === m ? { ...m } : out;
  o[k] = v;
  return o;
}

/** Every string and object key of a JSON value escaped; the same value (identity) when nothing
 * changed, so a tool definition without a marker stays byte-identical. Key order is kept. */
export function escapeJson(v: unknown): unknown {
  if (typeof v === 'string') return escapeFrame(v);
  if (Array.isArray(v)) {
    let changed = false;
    const out = v.map((x) => {
      const e = escapeJson(x);
      if (e !== x) changed = true;
      return e;
    });
    return changed ? out : v;
  }
  if (v && typeof v === 'object') {
    let changed = false;
    const entries = Object.entries(v).map(([k, x]): [string, unknown] => {
      const ek = escapeFrame(k);
      const ex = escapeJson(x);
      if (ek !== k || ex !== x) changed = true;
      return [ek, ex];
    });
    return changed ? Object.fromEntries(entries) : v;
  }
  return v;
}

/** Escaped form per message object: a message resent as the same object (layout/resent.ts) is
 * escaped once per session. Exact: escaping is a pure function of the message, which no one
 * mutates (stages copy on write). */
export type EscapeMemo = WeakMap<object, object>;

/**
 * The one place untrusted text is escaped: every message of every role (the system prompt and
 * the agent's own earlier turns included: the gateway trusts none of them to carry its notes),
 * and the tool definitions. The same request object when nothing changed, so unchanged messages
 * and tools keep their identity. With `memo`, messages escaped before are not scanned again.
 */
export function escapeRequest(body: ChatRequest, memo?: EscapeMemo): ChatRequest {
  let changed = false;
  const messages = body.messages.map((m) => {
    if (!m || typeof m !== 'object') return m;
    let e = memo?.get(m) as ChatMessage | undefined;
    if (e === undefined) {
      e = escapeMessage(m);
      memo?.set(m, e);
    }
    if (e !== m) changed = true;
    return e;
  });
  let tools = body.tools;
  if (Array.isArray(tools)) {
    // Tools resent as the same array (layout/resent.ts) are escaped once, like messages.
    let e = memo?.get(tools) as ToolDef[] | undefined;
    if (e === undefined) {
      e = escapeJson(tools) as ToolDef[];
      memo?.set(tools, e);
    }
    tools = e;
  }
  if (!changed && tools === body.tools) return body;
  const out = { ...body, messages: changed ? messages : body.messages };
  if (tools !== body.tools) out.tools = tools;
  return out;
}
