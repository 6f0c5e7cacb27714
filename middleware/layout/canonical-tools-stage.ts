// Canonical tools and schemas (layout step 4): the session's first-seen tool order and first-seen
// key order in every JSON object of the tools, of response_format, and of tool-call arguments
// (re-serialised only when they parse as JSON and their key order actually differs), so identical
// meaning renders byte-identically on every call. O(tools + arguments size) per call.
import { defineSlot, readSlot, writeSlot } from '../session/stage-state.ts';
import type { RequestView, Stage, StageContext, StageResult } from '../stage.ts';
import type { ChatMessage, Receipt, ToolDef } from '../types.ts';
import { applyFirstSeenList, applyFirstSeenOrder, sameSerialisation, type KeyTree } from './first-seen-order.ts';

export const CANONICAL_STAGE = 'canonical_tools';

export interface CanonState {
  tools: string[];
  trees: Record<string, KeyTree>;
}

/** The session's first-seen orders (mutated in place as new tools and keys are seen). */
export const CANON_SLOT = defineSlot<CanonState>(CANONICAL_STAGE, 1);

const toolName = (t: ToolDef): string => t.function?.name ?? JSON.stringify(t);

export function canonicaliseTools(view: RequestView, ctx: StageContext): StageResult {
  void ctx;
  let state = readSlot(view.session, CANON_SLOT);
  if (!state) writeSlot(view.session, CANON_SLOT, (state = { tools: [], trees: {} }));
  const receipts: Receipt[] = [];
  let body = view.body;

  if (Array.isArray(body.tools) && body.tools.length > 0) {
    const ordered = applyFirstSeenList(body.tools, toolName, state.tools).map((t) => {
      const next = applyFirstSeenOrder(t, (state.trees['tool:' + toolName(t)] ??= {})) as ToolDef;
      return sameSerialisation(next, t) ? t : next;
    });
    if (!sameSerialisation(ordered, body.tools)) {
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
  body.messages.forEach((m, i) => {
    if (m.role !== 'assistant' || !Array.isArray(m.tool_calls)) return;
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
      const next = applyFirstSeenOrder(parsed, (state.trees['args:' + tc.function.name] ??= {}));
      if (sameSerialisation(next, parsed)) return;
      calls ??= m.tool_calls!.slice();
      calls[j] = { ...tc, function: { ...tc.function, arguments: JSON.stringify(next) } };
      receipts.push({
        stage: CANONICAL_STAGE,
        action: 'reorder',
        target: `messages[${i}].tool_calls[${j}].arguments`,
        reason: "argument key order differs from the session's first-seen order",
      });
    });
    if (calls) {
      messages ??= body.messages.slice();
      messages[i] = { ...m, tool_calls: calls };
    }
  });
  if (messages) body = { ...body, messages };
  // A conversation's opening call (no assistant turn yet) passes unchanged even when an identical
  // opening already set this session's first-seen order (parallel agents fork at their first turn).
  if (body !== view.body && !view.body.messages.some((m) => m.role === 'assistant')) return { view, receipts: [] };
  return { view: body === view.body ? view : { ...view, body }, receipts };
}

export const canonicalToolsStage: Stage = { name: CANONICAL_STAGE, run: canonicaliseTools };
