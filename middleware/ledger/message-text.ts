// Text access to chat messages: the text of a content value, appending a note, replacing the
// text, and a stable per-message hash. Shared by ledger, stabilisation and compaction.
import type { ChatMessage, ContentPart } from '../types.ts';
import { canonicalHash, sha256Hex } from '../canonical-json.ts';

export function contentText(content: ChatMessage['content']): string {
  if (content == null) return '';
  if (typeof content === 'string') return content;
  return content.map((p: ContentPart) => (typeof p.text === 'string' ? p.text : '')).join('\n');
}

export function messageText(m: ChatMessage): string {
  return contentText(m.content);
}

/** Appends a note to the message's content; parts-form content gains a text part. */
export function appendNote(m: ChatMessage, note: string): ChatMessage {
  const c = m.content;
  if (Array.isArray(c)) return { ...m, content: [...c, { type: 'text', text: note }] };
  const base = typeof c === 'string' ? c : '';
  return { ...m, content: base.length ? `${base}\n\n${note}` : note };
}

export function withText(m: ChatMessage, text: string): ChatMessage {
  return { ...m, content: text };
}

const hashes = new WeakMap<ChatMessage, string>();

/** Hash of everything the model sees in a message (role, content, calls, reasoning). Memoised per
 * message object (messages are never mutated: stages copy on write), so a message resent as the
 * same object (layout/resent.ts) is hashed once per session, not once per call. */
export function messageHash(m: ChatMessage): string {
  let h = hashes.get(m);
  if (h === undefined) {
    h = hashOf(m);
    hashes.set(m, h);
  }
  return h;
}

function hashOf(m: ChatMessage): string {
  const fast = plainCanonical(m);
  if (fast !== undefined) return sha256Hex(fast);
  return canonicalHash({
    role: m.role,
    content: m.content ?? null,
    tool_calls:
      m.tool_calls?.map((t) => ({ id: t.id, name: t.function?.name, arguments: t.function?.arguments })) ?? null,
    tool_call_id: m.tool_call_id ?? null,
    reasoning_content: m.reasoning_content ?? null,
    name: m.name ?? null,
  });
}

/** A string or absent value as canonical JSON writes it under a `?? null` key; undefined otherwise. */
function strOrNull(v: unknown): string | undefined {
  return v == null ? 'null' : typeof v === 'string' ? JSON.stringify(v) : undefined;
}

/** The canonical JSON hashOf's object has (keys sorted: content, name, reasoning_content, role,
 * tool_call_id, tool_calls; in a call arguments, id, name; undefined keys left out), written
 * directly for the common shape: string fields, text content, calls with string fields.
 * Anything else (parts content, numbers, odd calls) returns undefined: the generic writer does it. */
function plainCanonical(m: ChatMessage): string | undefined {
  if (typeof m.role !== 'string') return undefined;
  const content = strOrNull(m.content);
  const name = strOrNull(m.name);
  const reasoning = strOrNull(m.reasoning_content);
  const callId = strOrNull(m.tool_call_id);
  if (content === undefined || name === undefined || reasoning === undefined || callId === undefined) return undefined;
  let calls = 'null';
  const tcs: unknown = m.tool_calls;
  if (tcs != null) {
    if (!Array.isArray(tcs)) return undefined;
    const parts: string[] = [];
    for (const t of tcs as unknown[]) {
      if (t === null || typeof t !== 'object' || Array.isArray(t)) return undefined;
      const { id, function: fn } = t as { id?: unknown; function?: unknown };
      if (fn !== undefined && (fn === null || typeof fn !== 'object' || Array.isArray(fn))) return undefined;
      const { name: fname, arguments: args } = (fn ?? {}) as { name?: unknown; arguments?: unknown };
      const fields: string[] = [];
      for (const [k, v] of [
        ['arguments', args],
        ['id', id],
        ['name', fname],
      ] as const) {
        if (v === undefined) continue;
        if (typeof v !== 'string') return undefined;
        fields.push(`"${k}":${JSON.stringify(v)}`);
      }
      parts.push(`{${fields.join(',')}}`);
    }
    calls = `[${parts.join(',')}]`;
  }
  return `{"content":${content},"name":${name},"reasoning_content":${reasoning},"role":${JSON.stringify(m.role)},"tool_call_id":${callId},"tool_calls":${calls}}`;
}

export type CountTokens = (text: string) => number;

/** Simple default counter (≈ 4 chars per token) for tests and when no tokenizer is wired. */
export const approxTokens: CountTokens = (t) => Math.ceil(t.length / 4);

/** Per-message token estimate including the tool calls and reasoning it carries. */
export function messageTokens(m: ChatMessage, count: CountTokens): number {
  let n = 4 + count(messageText(m));
  if (m.reasoning_content) n += count(m.reasoning_content);
  for (const t of m.tool_calls ?? []) n += 4 + count(t.function?.name ?? '') + count(t.function?.arguments ?? '');
  return n;
}
