// Volatility learned inside tool definitions: an agent that writes a date, a counter or an id into
// a tool's description (or a schema's `description`/`title`) and changes it between calls would
// otherwise change the tools block — rendered before the whole history — on every call.
// Same rule as the root (line-learner.ts): call 1 passes unchanged; a line of such a string seen
// changing between calls of the session keeps its place with each changing span replaced by the
// constant placeholder `⟦ctxgate: see note⟧`, and the full line travels verbatim in the leaf note
// under a `[ctxgate]` header naming the tool. The tools keep their first-seen order (canonical
// tools run first) and every other byte; a line never moves out of a tool (a tool must stay whole
// to be callable), and values that are the tool's contract (`name`, `enum`, `const`, `default`,
// `pattern`, property names) are never touched: a change there is a tools change (diagnosed).
// O(size of the tool definitions) per call, except when the tools are the very array of the call
// that wrote this state (resent tools keep their identity, layout/resent.ts): that call's result
// is reused, as nothing can be learned. The state holds hashes only.
import { clearSlot, defineSlot, readSlot, writeSlot } from '../session/stage-state.ts';
import type { RequestView, StageContext, StageResult } from '../stage.ts';
import { escapeFrame } from '../redaction/framing.ts';
import type { Receipt, ToolDef } from '../types.ts';
import { toolProse } from './tool-prose.ts';
import { lineKeys, observeLine, pruneLearned, shortHash, type LearnState } from './line-learner.ts';
import { changingSpans, withPlaceholders, type Span } from './volatile-spans.ts';

/** The tool definitions' part of the volatile stage's state. */
export const VOLATILE_TOOLS_SLOT = defineSlot<LearnState>('volatile_tools', 1);

export const toolNoteHeader = (name: string): string =>
  `[ctxgate] moved from the definition of tool ${JSON.stringify(name)} (volatile, changes between calls):`;

interface Found {
  /** Path from the tool's `function` object. */
  path: (string | number)[];
  text: string;
}

function setAt(root: unknown, path: (string | number)[], text: string): unknown {
  if (path.length === 0) return text;
  const [k, ...rest] = path;
  if (Array.isArray(root)) return root.map((v, i) => (i === k ? setAt(v, rest, text) : v));
  const o = root as Record<string, unknown>;
  return { ...o, [k]: setAt(o[k], rest, text) };
}

/** The span without the line's leading/trailing whitespace (indentation stays in place). */
function trimmed(line: string): Span {
  const lead = line.length - line.trimStart().length;
  return { start: lead, end: Math.max(lead, line.trimEnd().length) };
}

/** What a call did with its tools, by the state object it wrote (see above). */
interface ToolsMemo {
  tools: readonly ToolDef[];
  opening: boolean;
  tokenizer: StageContext['tokenizer'];
  out: ToolDef[];
  notes: readonly string[];
  receipts: readonly Receipt[];
}
const toolsMemo = new WeakMap<LearnState, ToolsMemo>();

export function relocateToolVolatility(view: RequestView, ctx: StageContext): StageResult {
  const old = ctx.newSession ? undefined : readSlot(view.session, VOLATILE_TOOLS_SLOT);
  const tools = view.body.tools;
  if (!Array.isArray(tools) || tools.length === 0) {
    clearSlot(view.session, VOLATILE_TOOLS_SLOT);
    return { view, receipts: [] };
  }
  const opening = !view.body.messages.some((m) => m.role === 'assistant');
  const m = old ? toolsMemo.get(old) : undefined;
  if (m && m.tools === tools && m.opening === opening && m.tokenizer === ctx.tokenizer) {
    if (m.notes.length === 0) return { view, receipts: [] };
    return {
      view: { ...view, body: { ...view.body, tools: m.out }, notes: [...view.notes, ...m.notes] },
      receipts: m.receipts.map((r) => ({ ...r })),
    };
  }
  const r = relocateTools(view, ctx, old, tools, opening);
  const written = readSlot(view.session, VOLATILE_TOOLS_SLOT);
  if (written)
    toolsMemo.set(written, {
      tools,
      opening,
      tokenizer: ctx.tokenizer,
      out: r.view.body.tools ?? tools,
      notes: r.view.notes.slice(view.notes.length),
      receipts: r.receipts.map((x) => ({ ...x })),
    });
  return r;
}

function relocateTools(
  view: RequestView,
  ctx: StageContext,
  old: LearnState | undefined,
  tools: ToolDef[],
  opening: boolean,
): StageResult {
  const prev = old?.prev ?? {};
  const learned: LearnState['learned'] = { ...(old?.learned ?? {}) };
  const next: LearnState['prev'] = {};
  // A conversation's opening call (no assistant turn yet) passes unchanged: it only learns.
  const receipts: Receipt[] = [];
  const notes: string[] = [];
  const out = tools.slice();
  tools.forEach((tool, ti) => {
    const name = tool.function?.name ?? `#${ti}`;
    const found: Found[] = [];
    toolProse(tool.function, (path, text) => found.push({ path, text }));
    let fn: unknown = tool.function;
    const moved: string[] = [];
    for (const f of found) {
      const lines = f.text.split('\n');
      const keys = lineKeys(`${shortHash(`${name}\u0000${JSON.stringify(f.path)}`)}:`, lines);
      let changed = false;
      const kept = lines.map((line, li) => {
        const key = keys[li];
        if (key === undefined) return line;
        const { known, runs } = observeLine(key, line, prev, learned, next);
        if (opening || !known?.length) return line;
        const spans =
          known.includes(-1) || known.some((k) => k >= runs.length)
            ? [trimmed(line)]
            : changingSpans(
                line,
                known.map((k) => runs[k]),
              );
        changed = true;
        // Tool text arrives escaped (escapeRequest); escaping again is a no-op kept as a guard.
        moved.push(escapeFrame(line));
        receipts.push({
          stage: 'volatile',
          action: 'placeholder',
          target: `tools[${JSON.stringify(name)}].${f.path.join('.')}`,
          tokens_before: ctx.tokenizer.countTokens(line),
          tokens_after: 0,
          reason:
            'values in this line of a tool definition change between calls of this session; the line stays with a placeholder, in full in the leaf note',
        });
        return withPlaceholders(line, spans);
      });
      if (changed) fn = setAt(fn, f.path, kept.join('\n'));
    }
    if (moved.length) {
      out[ti] = { ...tool, function: fn as ToolDef['function'] };
      notes.push([toolNoteHeader(name), ...moved].join('\n'));
    }
  });
  pruneLearned(learned, next);
  writeSlot(view.session, VOLATILE_TOOLS_SLOT, { prev: next, learned });
  if (notes.length === 0) return { view, receipts: [] };
  return {
    view: { ...view, body: { ...view.body, tools: out }, notes: [...view.notes, ...notes] },
    receipts,
  };
}
