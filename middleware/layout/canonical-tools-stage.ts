// Canonical tools and schemas (layout step 4): the session's first-seen tool order and first-seen
// key order in every JSON object of the tools, of response_format, and of tool-call arguments
// (re-serialised only when they parse as JSON and their key order actually differs), so identical
// meaning renders byte-identically on every call. O(tools + arguments size of messages not seen
// before) per call, plus one pointer compare per resent message: the messages a call shares, as the
// very same objects at the same indices, with the previous call that ended with the same stored
// orders give what they gave then (orders only ever gain keys at the end, and their keys were
// learned then), so their arguments are not parsed again and nothing per message is looked up;
// the same holds for the tools array resent as the same array (layout/resent.ts interns both).
import { defineSlot, readSlot, writeSlot } from '../session/stage-state.ts';
import type { RequestView, Stage, StageContext, StageResult } from '../stage.ts';
import type { ChatMessage, Receipt, ToolDef } from '../types.ts';
import {
  applyFirstSeenList,
  applyFirstSeenOrder,
  inFirstSeenOrder,
  sameSerialisation,
  type KeyTree,
} from './first-seen-order.ts';

export const CANONICAL_STAGE = 'canonical_tools';

export interface CanonState {
  tools: string[];
  trees: Record<string, KeyTree>;
}

/** The session's first-seen orders (mutated in place as new tools and keys are seen). */
export const CANON_SLOT = defineSlot<CanonState>(CANONICAL_STAGE, 1);

const toolName = (t: ToolDef): string => t.function?.name ?? JSON.stringify(t);

/** An assistant message the call rewrote: its index, what was sent, the calls rewritten (receipts). */
interface Rewrite {
  i: number;
  out: ChatMessage;
  calls: number[];
}
/** What a call did: its messages as received with the rewrites among them, and with its tools
 * array the array sent on. The messages array is held weakly (the pipeline's local LRU keeps a
 * session's last request; an array it dropped only costs parsing the arguments again) and never
 * changed in place by anyone (stages copy on write). */
interface Memo {
  input: WeakRef<readonly ChatMessage[]>;
  rewrites: Rewrite[];
  tools?: { in: ToolDef[]; out: ToolDef[] };
}

/** Per stored (frozen, so unchanged) orders: what the call that ended with them did. */
const memos = new WeakMap<CanonState, Memo>();

export function canonicaliseTools(view: RequestView, ctx: StageContext): StageResult {
  void ctx;
  const stored = readSlot(view.session, CANON_SLOT);
  // What this call does, recorded afresh by each attempt (a failed one may have recorded a part).
  let seen = freshMemo(view);
  let state = stored;
  let r: StageResult | undefined;
  if (!state) {
    state = { tools: [], trees: {} };
    writeSlot(view.session, CANON_SLOT, state);
  } else if (Object.isFrozen(state)) {
    // The stored orders are shared and frozen (session/shared-parts.ts): a call that learns nothing
    // writes nothing to them; one that learns a key throws at its first write and runs again on a
    // copy (keys only, O(schemas)), which becomes the session's part.
    try {
      r = withOrders(view, state, memos.get(state), seen);
    } catch (err) {
      if (!(err instanceof TypeError)) throw err;
      state = structuredClone(state);
      writeSlot(view.session, CANON_SLOT, state);
      seen = freshMemo(view);
    }
  }
  r ??= withOrders(view, state, undefined, seen);
  memos.set(state, seen);
  return r;
}

// Module functions, not closures made per call: tsx (esbuild keepNames) names every `const f = () =>`
// it makes, a defineProperty each time.

/** A fresh record of what a call does (each attempt records afresh: a failed one may have recorded a part). */
function freshMemo(view: RequestView): Memo {
  return { input: new WeakRef(view.body.messages), rewrites: [] };
}

/** The receipt of a tool call's arguments rewritten in the session's order. */
function reorder(i: number, j: number): Receipt {
  return {
    stage: CANONICAL_STAGE,
    action: 'reorder',
    target: `messages[${i}].tool_calls[${j}].arguments`,
    reason: "argument key order differs from the session's first-seen order",
  };
}

/** The stage's work with the session's orders `state`, learning new tools and keys into it;
 * `prev`: what a call ending with these very orders did; `seen`: what this one does. */
function withOrders(view: RequestView, state: CanonState, prev: Memo | undefined, seen: Memo): StageResult {
  const receipts: Receipt[] = [];
  let body = view.body;

  if (Array.isArray(body.tools) && body.tools.length > 0) {
    const tools = body.tools;
    const ordered =
      prev?.tools?.in === tools
        ? prev.tools.out
        : applyFirstSeenList(tools, toolName, state.tools).map((t) => {
            const next = applyFirstSeenOrder(t, (state.trees['tool:' + toolName(t)] ??= {})) as ToolDef;
            return sameSerialisation(next, t) ? t : next;
          });
    const reordered = ordered !== tools && (prev?.tools?.in === tools || !sameSerialisation(ordered, tools));
    seen.tools = { in: tools, out: reordered ? ordered : tools };
    if (reordered) {
      body = { ...body, tools: ordered };
      receipts.push({
        stage: CANONICAL_STAGE,
        action: 'reorder',
        target: 'tools',
        reason: "tool list or schema key order differs from the session's first-seen order",
      });
    }
  }

  if (body.response_format !== undefined && typeof body.response_format === 'object') {
    const next = applyFirstSeenOrder(body.response_format, (state.trees.response_format ??= {}));
    if (!sameSerialisation(next, body.response_format)) {
      body = { ...body, response_format: next };
      receipts.push({
        stage: CANONICAL_STAGE,
        action: 'reorder',
        target: 'response_format',
        reason: "schema key order differs from the session's first-seen order",
      });
    }
  }

  let messages: ChatMessage[] | undefined;
  const input = body.messages;
  // The prefix shared with the previous call, object for object: its rewrites carry over as they were.
  const n = input.length;
  let from = 0;
  const before = prev?.input.deref();
  if (prev && before) {
    const p = Math.min(n, before.length);
    while (from < p && input[from] === before[from]) from++;
    for (const w of prev.rewrites) {
      if (w.i >= from) break;
      seen.rewrites.push(w);
      for (const j of w.calls) receipts.push(reorder(w.i, j));
      (messages ??= input.slice())[w.i] = w.out;
    }
  }
  for (let i = from; i < n; i++) {
    const m = input[i];
    if (m.role !== 'assistant' || !Array.isArray(m.tool_calls)) continue;
    const rewritten: number[] = [];
    let calls: typeof m.tool_calls | undefined;
    m.tool_calls.forEach((tc, j) => {
      const args = tc.function?.arguments;
      if (typeof args !== 'string') return;
      let parsed: unknown;
      try {
        parsed = JSON.parse(args);
      } catch {
        return; // not JSON: sent exactly as the agent wrote it
      }
      if (typeof parsed !== 'object' || parsed === null) return;
      const tree = (state.trees['args:' + tc.function.name] ??= {});
      // Known keys in their known order (the usual case): nothing to learn, nothing to rewrite.
      if (inFirstSeenOrder(parsed, tree)) return;
      const next = applyFirstSeenOrder(parsed, tree);
      if (sameSerialisation(next, parsed)) return;
      calls ??= m.tool_calls!.slice();
      calls[j] = { ...tc, function: { ...tc.function, arguments: JSON.stringify(next) } };
      rewritten.push(j);
      receipts.push(reorder(i, j));
    });
    if (calls) {
      const out = { ...m, tool_calls: calls };
      (messages ??= input.slice())[i] = out;
      seen.rewrites.push({ i, out, calls: rewritten });
    }
  }
  if (messages) body = { ...body, messages };
  // A conversation's opening call (no assistant turn yet) passes unchanged even when an identical
  // opening already set this session's first-seen order (parallel agents fork at their first turn).
  if (body !== view.body && !view.body.messages.some((m) => m.role === 'assistant')) return { view, receipts: [] };
  return { view: body === view.body ? view : { ...view, body }, receipts };
}

export const canonicalToolsStage: Stage = { name: CANONICAL_STAGE, run: canonicaliseTools };
