// Session identification (layout step 1), in order: `x-session-id` header, `prompt_cache_key`,
// `user`, else a derived id. The derived id is a hash of (tenant, model, root, first user message)
// computed after volatile spans and digits are removed from the root and with tool names sorted,
// so a clock line or a tool reshuffle cannot split one agent's session into many.
//
// Parallel agents on the same task (evaluation harnesses, best-of-n) send the same root and task,
// so that hash alone would put two conversations into one session. Once a request carries an
// assistant turn, a fork id is derived that also hashes the FIRST assistant message (reasoning and
// <think> blocks dropped, tool-call ids ignored, arguments canonicalised, since agents commonly
// strip or re-serialise those); it stays fixed for the rest of the conversation, because later
// calls resend that message unchanged. `parent` names the pre-assistant (base) id and `lead`
// fingerprints the non-root messages before the first assistant turn. Which of the two ids a
// request gets is decided with the session store (session-claim.ts): the first conversation to
// continue the base keeps the base id for its whole run (one session id per agent run); another
// conversation with a different first turn (a true fork) moves to its fork id, seeded with call 1.
//
// Consequences: an agent that rewrites or drops its first assistant message (e.g. compaction that
// elides the earliest turns) gets its fork id from then on, seeded from call 1's state. Two
// agents whose first replies are identical (greedy decoding) still share a session until nothing
// tells them apart; their prompts are identical up to there anyway.
// O(root + first user message + first assistant message, capped at MAX_ASSISTANT_KEY_CHARS) on a
// session's first call; later calls resend those messages as the same objects (layout/resent.ts),
// so the derived ids are memoised on them (O(root messages) identity compares per call).
import { createHash } from 'node:crypto';
import { canonicalJson } from '../canonical-json.ts';
import type { ChatMessage, ChatRequest, PipelineContext } from '../types.ts';
import { flattenContent } from '../tokens/template-input.ts';
import { isRootRole } from './segmentation.ts';
import { sessionRootKey } from './volatile-spans.ts';

export type SessionSource = 'header' | 'prompt_cache_key' | 'user' | 'hash';

export interface SessionIdentity {
  id: string;
  source: SessionSource;
  /** Derived ids of requests with an assistant turn: the pre-assistant (base) id; `id` is then the
   * fork id, used only when another conversation claimed the base (session-claim.ts). */
  parent?: string;
  /** Derived ids only: fingerprint of the non-root messages before the first assistant turn. */
  lead?: string;
}

/** Longest client-supplied id kept verbatim; longer ones are hashed (bounded store keys). */
export const MAX_CLIENT_SESSION_ID = 128;
/** Hex characters of a derived id (after the `s_` prefix). */
const DERIVED_ID_HEX = 32;

function clientId(v: unknown): string | undefined {
  if (typeof v !== 'string' || v.length === 0) return undefined;
  return v.length <= MAX_CLIENT_SESSION_ID ? v : 'h_' + createHash('sha256').update(v).digest('hex').slice(0, 32);
}

/** Characters of an assistant message that identify it: an identity key needs no more, and the
 * cap bounds the per-request work whatever the client sends. */
export const MAX_ASSISTANT_KEY_CHARS = 64 * 1024;
const OPEN = '<think>';
const CLOSE = '</think>';

/** Drops `<think>…</think>` blocks, then anything up to a leading lone `</think>` (templates that
 * open <think> in the generation prompt leave only the closing tag). One indexOf pass, O(n): a lazy
 * regex here rescans to the end for every unclosed opener (O(openers × n)). */
export function stripThink(s: string): string {
  let out = '';
  let i = 0;
  for (;;) {
    const o = s.indexOf(OPEN, i);
    if (o < 0) break;
    const c = s.indexOf(CLOSE, o + OPEN.length);
    if (c < 0) break;
    out += s.slice(i, o);
    i = c + CLOSE.length;
  }
  out += s.slice(i);
  const tail = out.indexOf(CLOSE);
  return tail < 0 ? out : out.slice(tail + CLOSE.length);
}

function canonicalArgs(args: unknown): string {
  if (typeof args !== 'string') return canonicalJson(args ?? null);
  try {
    return canonicalJson(JSON.parse(args));
  } catch {
    return args;
  }
}

/** What identifies an assistant turn across resends: visible text and tool calls, not reasoning or call ids. */
export function assistantKey(m: ChatMessage): string {
  const text = stripThink(flattenContent(m.content).slice(0, MAX_ASSISTANT_KEY_CHARS)).trim();
  const calls = (m.tool_calls ?? []).map(
    (c) => `${c.function?.name ?? ''}\u0001${canonicalArgs(c.function?.arguments)}`,
  );
  return `${text}\u0000${calls.join('\u0002')}`;
}

/** A derived identity and what it was derived from: the same message objects (never mutated:
 * stages copy on write) and strings give the same identity. */
interface Derived {
  tenant: string;
  model: string;
  names: string;
  /** The messages read, from the first: the root, the messages up to the first assistant one and
   * the first user message. */
  read: readonly ChatMessage[];
  /** The identity holds for requests of exactly this many messages (no assistant turn, or one
   * that ends the request), else for requests of at least this many. */
  length: number;
  exact: boolean;
  identity: SessionIdentity;
}

/** Derived identities by first message (a WeakMap: dropped with the message). */
const derivedMemo = new WeakMap<ChatMessage, Derived>();

function memoHit(d: Derived, tenant: string, model: string, names: string, messages: readonly ChatMessage[]): boolean {
  if (d.tenant !== tenant || d.model !== model || d.names !== names) return false;
  if (d.exact ? messages.length !== d.length : messages.length < d.length) return false;
  for (let i = 0; i < d.read.length; i++) if (messages[i] !== d.read[i]) return false;
  return true;
}

export function identifySession(body: ChatRequest, ctx: Pick<PipelineContext, 'tenant' | 'headers'>): SessionIdentity {
  const header = clientId(ctx.headers['x-session-id']);
  if (header) return { id: header, source: 'header' };
  const pck = clientId(body.prompt_cache_key);
  if (pck) return { id: pck, source: 'prompt_cache_key' };
  const user = clientId(body.user);
  if (user) return { id: user, source: 'user' };
  const messages = Array.isArray(body.messages) ? body.messages : [];
  const names = (body.tools ?? [])
    .map((t) => t.function?.name ?? '')
    .sort()
    .join('\u0001');
  const model = body.model ?? '';
  const first = messages[0];
  const memo = first === undefined ? undefined : derivedMemo.get(first);
  if (memo && memoHit(memo, ctx.tenant, model, names, messages)) return { ...memo.identity };
  const d = deriveSession(messages, ctx.tenant, model, names);
  if (first !== undefined && typeof first === 'object') derivedMemo.set(first, d);
  return { ...d.identity };
}

function deriveSession(messages: ChatMessage[], tenant: string, model: string, names: string): Derived {
  const h = createHash('sha256');
  h.update(tenant).update('\u0000').update(model).update('\u0000');
  let rootEnd = 0;
  for (const m of messages) {
    if (!isRootRole(m.role)) break;
    h.update(m.role)
      .update('\u0001')
      .update(sessionRootKey(flattenContent(m.content)))
      .update('\u0000');
    rootEnd++;
  }
  h.update(names).update('\u0000');
  const firstUserAt = messages.findIndex((m) => m.role === 'user');
  if (firstUserAt >= 0) h.update(flattenContent(messages[firstUserAt].content));
  const base = h.digest('hex');
  const baseId = 's_' + base.slice(0, DERIVED_ID_HEX);

  const lead = createHash('sha256');
  let a = rootEnd;
  for (; a < messages.length && messages[a].role !== 'assistant'; a++)
    lead.update(messages[a].role).update('\u0001').update(flattenContent(messages[a].content)).update('\u0000');
  const leadHex = lead.digest('hex').slice(0, DERIVED_ID_HEX);
  // An assistant message that ends the request is a prefill of the reply being generated, not a
  // turn the conversation has taken: it does not fork.
  const memo = (read: number, length: number, exact: boolean, identity: SessionIdentity): Derived => ({
    tenant,
    model,
    names,
    read: messages.slice(0, read),
    length,
    exact,
    identity,
  });
  if (a >= messages.length - 1)
    return memo(messages.length, messages.length, true, { id: baseId, source: 'hash', lead: leadHex });
  const fork = createHash('sha256').update(base).update('\u0002').update(assistantKey(messages[a])).digest('hex');
  const read = Math.max(a, firstUserAt) + 1;
  const identity: SessionIdentity = {
    id: 's_' + fork.slice(0, DERIVED_ID_HEX),
    source: 'hash',
    parent: baseId,
    lead: leadHex,
  };
  return memo(read, Math.max(read, a + 2), false, identity);
}
