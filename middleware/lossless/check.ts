// Lossless checker: does the body ctxgate sent upstream keep every line the agent sent?
//
//   checkLossless({ clientBody, upstreamBody, priorClientBodies?, receipts? }) → LosslessReport
//   createLosslessTracker() → { check(clientBody, upstreamBody, receipts?) }   (one per session,
//     keeps the session's earlier client bodies compactly: per message index, its distinct texts)
//
// The promise checked: every non-empty line of every message the agent sent reaches the model
// verbatim (byte for byte: whitespace, indentation, Unicode) either in place (in the upstream
// message aligned with it) or whole inside a gateway note block (a `[ctxgate]` line and the
// lines after it up to the next empty line: the leaf note, tombstones). Exceptions, each counted
// as allowed rather than missing:
// - a budgeted compaction removed it and a `compaction` receipt (`compacted`,
//   `compacted_above_low`) names its message range (`messages A–B`); pass the session's receipts
//   so far, since the compacted prefix is re-sent without a new receipt (the tracker also checks
//   that the message there is one the compaction saw, or an elision of it);
// - the message is sent as an earlier version the agent itself sent at the same position
//   (stabilise re-sends an output the agent later elided: the model sees more, never less);
// - marker look-alikes inside the agent's text escaped (framing.ts escapeMessage: contents,
//   reasoning, tool-call names and arguments): the client side is escaped before comparing.
// An upstream line of an aligned message that is neither a copy of an agent line, nor a gateway
// line, nor a placeholder line whose full line is in a note, is `altered` (a silent cut). Tool
// definitions and tool-call arguments are compared as JSON values (key order may be canonicalised);
// a line of a tool's string may carry placeholders when the agent's line is in a note (escaped).
// `first_call_changed` is 1 when there are no prior bodies (the session's first call) and the
// messages or tools are not byte-identical as JSON (escaping aside), unless a compaction receipt
// explains it. Reports counts plus details (message index, line). O(total lines) with hashing.
import { escapeFrame, escapeJson, escapeMessage, isFramedNote } from '../redaction/framing.ts';
import type { ChatMessage, ChatRequest, ContentPart, Receipt } from '../types.ts';
import { isElisionOf } from '../stabilise/elision.ts';
import { toolProse } from '../layout/tool-prose.ts';
import { placeholderMatches, VOLATILE_PLACEHOLDER } from './placeholder.ts';

export type LosslessKind = 'missing' | 'altered' | 'first_call_changed';

export interface LosslessDetail {
  kind: LosslessKind;
  /** Client message index (missing), upstream message index (altered), or -1 for the body (tools). */
  message: number;
  role?: string;
  /** The line concerned (truncated to 200 characters), or what differed. */
  line: string;
}

export interface LosslessReport {
  /** Agent lines that reached the model neither in place nor in a note, nor under a compaction receipt. */
  missing: number;
  /** Upstream lines (or tool calls / tool definitions) that are altered copies of the agent's. */
  altered: number;
  /** 1 when this is the session's first call and it did not pass unchanged, else 0. */
  first_call_changed: number;
  /** Agent lines found whole in a note instead of in place (allowed). */
  moved: number;
  /** Messages sent as an earlier version the agent sent at the same position (allowed). */
  restored: number;
  /** Agent messages removed under a compaction receipt (allowed). */
  compacted: number;
  details: LosslessDetail[];
}

export interface LosslessInput {
  clientBody: ChatRequest;
  upstreamBody: ChatRequest;
  /** The session's earlier client bodies, oldest first; empty or absent means this is its first call. */
  priorClientBodies?: readonly ChatRequest[];
  /** Receipts of the session so far (this call's included). */
  receipts?: readonly Receipt[];
}

/** Details kept per report; counts are always complete. */
export const MAX_DETAILS = 50;

const clip = (s: string): string => (s.length > 200 ? s.slice(0, 197) + '…' : s);

export function textOf(content: ChatMessage['content']): string {
  if (content == null) return '';
  if (typeof content === 'string') return content;
  return content.map((p: ContentPart) => (typeof p?.text === 'string' ? p.text : '')).join('\n');
}

/** JSON with object keys sorted: equal for values that differ only in key order. */
export function sortedJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(sortedJson).join(',')}]`;
  if (v && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o)
      .sort()
      .filter((k) => o[k] !== undefined)
      .map((k) => `${JSON.stringify(k)}:${sortedJson(o[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}

function argsKey(args: unknown): string {
  if (typeof args !== 'string') return sortedJson(args);
  try {
    return sortedJson(JSON.parse(args));
  } catch {
    return args;
  }
}

function callsKey(m: ChatMessage): string {
  return (m.tool_calls ?? [])
    .map((c) => `${c.id ?? ''}\u0000${c.function?.name ?? ''}\u0000${argsKey(c.function?.arguments)}`)
    .join('\u0001');
}

/** Compaction receipts' message ranges, as a set of client message indices. */
export function compactedIndices(receipts: readonly Receipt[] | undefined): Set<number> {
  const out = new Set<number>();
  for (const r of receipts ?? []) {
    if (r.stage !== 'compaction' || !/^compacted/.test(r.action) || !r.target) continue;
    const m = /messages (\d+)\s*[–-]\s*(\d+)/.exec(r.target);
    if (!m) continue;
    for (let i = Number(m[1]); i <= Number(m[2]); i++) out.add(i);
  }
  return out;
}

/** Lines of a gateway note block: a framed line and the lines after it up to an empty line. */
function splitGateway(lines: readonly string[]): { own: string[]; note: string[]; framed: number } {
  const own: string[] = [];
  const note: string[] = [];
  let inBlock = false;
  let framed = 0;
  for (const l of lines) {
    if (isFramedNote(l)) {
      inBlock = true;
      framed++;
      continue;
    }
    if (l === '') {
      inBlock = false;
      continue;
    }
    (inBlock ? note : own).push(l);
  }
  return { own, note, framed };
}

const isInserted = (m: ChatMessage): boolean => {
  const first = textOf(m.content)
    .split('\n')
    .find((l) => l !== '');
  return first !== undefined && isFramedNote(first);
};

function bump(map: Map<string, number>, k: string, d: number): void {
  const n = (map.get(k) ?? 0) + d;
  if (n === 0) map.delete(k);
  else map.set(k, n);
}

/**
 * Per-session history of client message texts, keyed by index: what `restored` accepts. Keeps
 * each distinct text once (a text seen at index i on any earlier call).
 */
export interface PriorVersions {
  at(index: number): ReadonlySet<string> | undefined;
}

export function priorVersionsOf(bodies: readonly ChatRequest[]): PriorVersions & { add(body: ChatRequest): void } {
  const byIndex: Set<string>[] = [];
  const add = (body: ChatRequest): void => {
    body.messages.forEach((m, i) => (byIndex[i] ??= new Set()).add(textOf(m.content)));
  };
  bodies.forEach(add);
  return { at: (i) => byIndex[i], add };
}

export function checkWith(
  clientBody: ChatRequest,
  upstreamBody: ChatRequest,
  prior: PriorVersions,
  firstCall: boolean,
  receipts: readonly Receipt[] = [],
  /** Per compacted index, the texts the agent had sent there by the call that compacted it: a
   * compaction only stands for those (or an elision of one). Unknown: any text is covered. */
  compactedVersions?: (index: number) => ReadonlySet<string> | undefined,
): LosslessReport {
  const rep: LosslessReport = {
    missing: 0,
    altered: 0,
    first_call_changed: 0,
    moved: 0,
    restored: 0,
    compacted: 0,
    details: [],
  };
  const note = (kind: LosslessKind, message: number, line: string, role?: string): void => {
    if (kind !== 'first_call_changed') rep[kind]++;
    if (rep.details.length < MAX_DETAILS)
      rep.details.push({ kind, message, ...(role ? { role } : {}), line: clip(line) });
  };
  // Frame escaping (framing.ts) is the one change allowed everywhere: compare with its result.
  const C = (clientBody.messages ?? []).map(escapeMessage);
  const U = upstreamBody.messages ?? [];
  const removed = compactedIndices(receipts);

  // Note lines anywhere upstream (moved whole), as a multiset.
  const upLines = U.map((m) => splitGateway(textOf(m.content).split('\n')));
  const noteLines = new Map<string, number>();
  for (const s of upLines) for (const l of s.note) bump(noteLines, l, 1);

  // Align client messages with upstream ones in order: compacted ones are skipped, inserted
  // gateway messages (checkpoint, a note message) are skipped, a mismatch is a missing message.
  const pairs: [number, number][] = [];
  let j = 0;
  // Within a run of compacted indices, those from here on are sent again (see below).
  let resendFrom = -1;
  const sentAs = (c: number, u: number): boolean =>
    U[u].role === C[c].role &&
    (U[u].tool_call_id ?? '') === (C[c].tool_call_id ?? '') &&
    upLines[u].own.join('\n') === nonEmpty(textOf(C[c].content)) &&
    callsKey(U[u]) === callsKey(C[c]);
  for (let i = 0; i < C.length; i++) {
    const sameKey = (m: ChatMessage): boolean =>
      m.role === C[i].role && (m.tool_call_id ?? '') === (C[i].tool_call_id ?? '');
    // An inserted-looking message is this agent message when it leads with a frame itself or was empty.
    while (j < U.length && isInserted(U[j]) && !(sameKey(U[j]) && (isInserted(C[i]) || textOf(C[i].content) === '')))
      j++;
    // A compaction receipt allows a run of messages to be absent. After a reset some or all of it
    // is sent again: the longest suffix of the run that the upstream continues with, verbatim
    // (message by message, so an equal message after the run is not taken for one inside it).
    if (removed.has(i)) {
      if (i === 0 || !removed.has(i - 1)) {
        let end = i;
        while (end < C.length && removed.has(end)) end++;
        resendFrom = end;
        for (let from = i; from < end; from++) {
          let u = j;
          let c = from;
          for (; c < end; c++, u++) {
            while (u < U.length && isInserted(U[u])) u++;
            if (u >= U.length || !sentAs(c, u)) break;
          }
          if (c === end) {
            resendFrom = from;
            break;
          }
        }
      }
      if (i < resendFrom) {
        // A message the agent put at a compacted index later (it reordered or rewrote its
        // history) was never compacted: hidden behind the checkpoint, it is missing.
        const vs = compactedVersions?.(i);
        const text = textOf(C[i].content);
        if (vs && !vs.has(text) && ![...vs].some((v) => isElisionOf(v, text)))
          for (const l of text.split('\n')) if (l !== '') note('missing', i, l, C[i].role);
        rep.compacted++;
        continue;
      }
    }
    if (j < U.length && sameKey(U[j])) {
      pairs.push([i, j++]);
      continue;
    }
    for (const l of textOf(C[i].content).split('\n')) if (l !== '') note('missing', i, l, C[i].role);
    if (C[i].tool_calls?.length) note('missing', i, `tool_calls of message ${i}`, C[i].role);
  }
  for (; j < U.length; j++) {
    if (isInserted(U[j])) continue;
    for (const l of upLines[j].own) note('altered', j, l, U[j].role);
  }

  for (const [i, k] of pairs) {
    const c = C[i];
    const u = U[k];
    const cText = textOf(c.content);
    if (callsKey(c) !== callsKey(u)) note('altered', k, `tool_calls of message ${i} differ`, u.role);
    if ((c.reasoning_content ?? '') !== (u.reasoning_content ?? ''))
      note('altered', k, `reasoning_content of message ${i} differs`, u.role);
    const own = upLines[k].own;
    // Restored: the upstream text (less gateway notes) is an earlier version the agent sent here.
    const ownText = own.join('\n');
    const versions = prior.at(i);
    if (
      ownText !== nonEmpty(cText) &&
      versions &&
      [...versions].some((v) => nonEmpty(v) === ownText || nonEmpty(escapeFrame(v)) === ownText)
    ) {
      rep.restored++;
      continue;
    }
    const avail = new Map<string, number>();
    for (const l of own) bump(avail, l, 1);
    const unplaced: string[] = [];
    for (const l of cText.split('\n')) {
      if (l === '') continue;
      const esc = escapeFrame(l);
      if (avail.has(l)) bump(avail, l, -1);
      else if (esc !== l && avail.has(esc)) bump(avail, esc, -1);
      else unplaced.push(l);
    }
    // Leftover upstream lines: a placeholder line standing for an unplaced line that sits in a note.
    for (const [l, n] of avail) {
      for (let r = 0; r < n; r++) {
        const at = l.includes(VOLATILE_PLACEHOLDER)
          ? unplaced.findIndex((o) => placeholderMatches(l, o) && noteLines.has(o))
          : -1;
        if (at >= 0) {
          const [o] = unplaced.splice(at, 1);
          bump(noteLines, o, -1);
          rep.moved++;
        } else note('altered', k, l, u.role);
      }
    }
    for (const l of unplaced) {
      if (noteLines.has(l)) {
        bump(noteLines, l, -1);
        rep.moved++;
      } else note('missing', i, l, c.role);
    }
  }

  if (sortedToolSet(clientBody.tools) !== sortedToolSet(upstreamBody.tools)) {
    const moved = toolsMoved(clientBody.tools, upstreamBody.tools, noteLines);
    if (moved === undefined) note('altered', -1, 'tools differ (as JSON values, any order)');
    else rep.moved += moved;
  }
  if (firstCall && removed.size === 0) {
    const same = C.length === U.length && C.every((m, i) => sameMessage(m, U[i]));
    // escaping is the only change allowed on a first call (messages and tools alike)
    if (!same || JSON.stringify(escapeJson(clientBody.tools ?? null)) !== JSON.stringify(upstreamBody.tools ?? null)) {
      rep.first_call_changed = 1;
      const at = C.findIndex((m, i) => !U[i] || !sameMessage(m, U[i]));
      note('first_call_changed', at, at < 0 ? 'tools changed' : `message ${at} changed`);
    }
  }
  return rep;
}

const nonEmpty = (t: string): string =>
  t
    .split('\n')
    .filter((l) => l !== '')
    .join('\n');

function sameMessage(a: ChatMessage, b: ChatMessage): boolean {
  if (JSON.stringify(a) === JSON.stringify(b)) return true;
  // Escaping the frame marker inside untrusted text is the only change allowed on a first call.
  const ea = { ...a, content: typeof a.content === 'string' ? escapeFrame(a.content) : a.content };
  return JSON.stringify(ea) === JSON.stringify(b);
}

/**
 * Tools that differ only by placeholder lines in their strings, each standing for the agent's line
 * found (escaped) in a note: how many lines moved (consumed from `noteLines`), or undefined when
 * any tool is otherwise different. Tools are paired by JSON value of their name, in any order.
 */
function toolsMoved(client: unknown, upstream: unknown, noteLines: Map<string, number>): number | undefined {
  const cs = Array.isArray(client) ? client : [];
  const us = Array.isArray(upstream) ? upstream : [];
  if (cs.length !== us.length) return undefined;
  const free = cs.map((_, i) => i);
  let moved = 0;
  for (const u of us) {
    const name = sortedJson((u as ToolDefLike)?.function?.name);
    const at = free.findIndex((i) => {
      if (sortedJson((cs[i] as ToolDefLike)?.function?.name) !== name) return false;
      const used: string[] = [];
      // placeholders are allowed only in prose positions; every other value must arrive exactly
      const prose = new Set<string>();
      toolProse((cs[i] as ToolDefLike)?.function, (p) => prose.add(JSON.stringify(['function', ...p])));
      if (sameBut(cs[i], u, noteLines, used, [], prose)) {
        moved += used.length;
        return true;
      }
      for (const l of used) bump(noteLines, l, 1);
      return false;
    });
    if (at < 0) return undefined;
    free.splice(at, 1);
  }
  return moved;
}

type ToolDefLike = { function?: { name?: unknown } } | undefined;

function sameBut(
  c: unknown,
  u: unknown,
  noteLines: Map<string, number>,
  used: string[],
  path: (string | number)[],
  prose: Set<string>,
): boolean {
  if (typeof c === 'string' && typeof u === 'string') {
    // escaping the frame marker is the one change allowed anywhere in a tool definition
    if (c === u || escapeFrame(c) === u) return true;
    if (!prose.has(JSON.stringify(path))) return false;
    const cl = c.split('\n');
    const ul = u.split('\n');
    if (cl.length !== ul.length) return false;
    return cl.every((l, i) => {
      const esc = escapeFrame(l);
      if (l === ul[i] || esc === ul[i]) return true;
      if (!ul[i].includes(VOLATILE_PLACEHOLDER) || !placeholderMatches(ul[i], l) || !noteLines.has(esc)) return false;
      bump(noteLines, esc, -1);
      used.push(esc);
      return true;
    });
  }
  if (Array.isArray(c) || Array.isArray(u))
    return (
      Array.isArray(c) &&
      Array.isArray(u) &&
      c.length === u.length &&
      c.every((x, i) => sameBut(x, u[i], noteLines, used, [...path, i], prose))
    );
  if (c && u && typeof c === 'object' && typeof u === 'object') {
    const co = c as Record<string, unknown>;
    const uo = u as Record<string, unknown>;
    const ck = Object.keys(co).filter((k) => co[k] !== undefined);
    const uk = Object.keys(uo).filter((k) => uo[k] !== undefined);
    return (
      ck.length === uk.length &&
      ck.every((k) => {
        const ek = escapeFrame(k);
        return ek in uo && sameBut(co[k], uo[ek], noteLines, used, [...path, k], prose);
      })
    );
  }
  return sortedJson(c) === sortedJson(u);
}

function sortedToolSet(tools: unknown): string {
  if (!Array.isArray(tools) || tools.length === 0) return '[]';
  return tools.map(sortedJson).sort().join('\n');
}

export function checkLossless(input: LosslessInput): LosslessReport {
  const prior = input.priorClientBodies ?? [];
  return checkWith(input.clientBody, input.upstreamBody, priorVersionsOf(prior), prior.length === 0, input.receipts);
}

export interface LosslessTracker {
  /** Check one call of the session, then remember its client body and receipts. */
  check(clientBody: ChatRequest, upstreamBody: ChatRequest, receipts?: readonly Receipt[]): LosslessReport;
}

/** One per session: keeps the earlier bodies' texts per index and the receipts so far. */
export function createLosslessTracker(): LosslessTracker {
  const prior = priorVersionsOf([]);
  const seen: Receipt[] = [];
  const compacted = new Map<number, Set<string>>();
  let calls = 0;
  return {
    check(clientBody, upstreamBody, receipts = []) {
      const now = receipts.filter((r) => r.stage === 'compaction');
      seen.push(...now);
      // What each compaction of this call stood for: every text sent at its indices so far.
      for (const i of compactedIndices(now)) {
        const vs = compacted.get(i) ?? new Set<string>();
        for (const v of prior.at(i) ?? []) vs.add(v);
        const m = clientBody.messages?.[i];
        if (m) vs.add(textOf(m.content));
        compacted.set(i, vs);
      }
      const rep = checkWith(clientBody, upstreamBody, prior, calls === 0, seen, (i) => compacted.get(i));
      prior.add(clientBody);
      calls++;
      return rep;
    },
  };
}

/** Sum of reports (counts only; the first details up to MAX_DETAILS). */
export function sumReports(reps: readonly LosslessReport[]): LosslessReport {
  const out: LosslessReport = {
    missing: 0,
    altered: 0,
    first_call_changed: 0,
    moved: 0,
    restored: 0,
    compacted: 0,
    details: [],
  };
  for (const r of reps) {
    out.missing += r.missing;
    out.altered += r.altered;
    out.first_call_changed += r.first_call_changed;
    out.moved += r.moved;
    out.restored += r.restored;
    out.compacted += r.compacted;
    for (const d of r.details) if (out.details.length < MAX_DETAILS) out.details.push(d);
  }
  return out;
}
