// Volatile relocation: root lines (system prompt) SEEN changing between calls of a session leave
// the root's cached prefix and travel verbatim in the single leaf note after the history.
// - Learned, never guessed (default): call 1 passes unchanged. Each root line is keyed by its
//   shape (value runs normalised) and rank among lines of that shape; when the line under a key
//   differs from the previous call's, the value runs that differed are learned as its changing
//   spans (widened to a whole date/clock/id by the patterns). Words that change are a prompt
//   edit, not volatility: they stay (diagnosed as `system_changed`).
// - A label line (≤ LABEL_MAX_WORDS words beside its changing spans) moves whole; any other line
//   stays in place with each changing span replaced by VOLATILE_PLACEHOLDER, the full line in the
//   note. A root message is never emptied: then its label lines keep a placeholder too.
// - `transforms: { volatile: eager }` also moves whole label lines a pattern marks as volatile
//   ("Current date: …") on first sight, the first call included.
// Byte for byte: a line either stays as sent, stays with whole spans replaced by the placeholder,
// or is removed whole; the note carries every affected line as sent. O(root length) per call,
// except when the root is the very message objects of the call that wrote this state (resent
// history keeps its identity, layout/resent.ts): then nothing can be learned, and that call's
// result is reused (O(root messages)). The state holds hashes only (line, its runs), never text.
import { defineSlot, readSlot, writeSlot } from '../session/stage-state.ts';
import type { RequestView, Stage, StageContext, StageResult } from '../stage.ts';
import type { ChatMessage, ContentPart, Receipt } from '../types.ts';
import {
  changingSpans,
  eagerLabelSpans,
  LABEL_MAX_WORDS,
  lineShape,
  withPlaceholders,
  wordsOutside,
  type Span,
} from './volatile-spans.ts';
import { observeLine, pruneLearned, shortHash } from './line-learner.ts';
import { relocateToolVolatility } from './volatile-tools.ts';

export const VOLATILE_STAGE = 'volatile';
export const VOLATILE_NOTE_HEADER = '[ctxgate] moved from the system prompt (volatile, changes between calls):';

export interface VolatileState {
  /** line key → hash of the line, then a short hash per value run (previous call). */
  prev: Record<string, string[]>;
  /** line key → indices of value runs seen changing (-1: the whole line). */
  learned: Record<string, number[]>;
}

/** The root's part of the volatile stage's state; version 3: line keys by shape and rank, run hashes. */
export const VOLATILE_SLOT = defineSlot<VolatileState>(VOLATILE_STAGE, 3);

const EAGER_WHY = 'looks volatile (eager mode)';

interface Moved {
  text: string;
  /** Spans replaced by the placeholder in the root; absent: the whole line left. */
  spans?: Span[];
  /** The changing spans: what keeps a placeholder when moving the line whole would empty the root. */
  values: Span[];
  why: string;
}

const h = shortHash;

function textsOf(m: ChatMessage): string[] | undefined {
  if (typeof m.content === 'string') return [m.content];
  if (Array.isArray(m.content)) return m.content.map((p: ContentPart) => (typeof p.text === 'string' ? p.text : ''));
  return undefined;
}

function withTexts(m: ChatMessage, texts: string[]): ChatMessage {
  if (typeof m.content === 'string') return { ...m, content: texts[0] };
  const parts = (m.content as ContentPart[]).map((p, i) => (typeof p.text === 'string' ? { ...p, text: texts[i] } : p));
  return { ...m, content: parts };
}

/** What a call computed from its root (kept per state object it wrote, in this process). */
interface RootMemo {
  root: readonly ChatMessage[];
  start: number;
  eager: boolean;
  opening: boolean;
  tokenizer: StageContext['tokenizer'];
  /** The root messages as sent on (the same objects where nothing moved). */
  out: readonly ChatMessage[];
  note?: string;
  receipts: readonly Receipt[];
}

/** Results by the state object they wrote. The same root objects read against that very state
 * observe every line as before (nothing learned, the same state), so they decide the same. */
const rootMemo = new WeakMap<VolatileState, RootMemo>();

function memoised(view: RequestView, ctx: StageContext, state: VolatileState | undefined): StageResult | undefined {
  const m = state && !ctx.newSession ? rootMemo.get(state) : undefined;
  if (!m || m.tokenizer !== ctx.tokenizer) return undefined;
  const { start, end } = view.segments.root;
  const messages = view.body.messages;
  if (m.start !== start || m.root.length !== end - start) return undefined;
  if (m.eager !== (ctx.transforms?.[VOLATILE_STAGE] === 'eager')) return undefined;
  if (m.opening !== !messages.some((x) => x.role === 'assistant')) return undefined;
  for (let i = 0; i < m.root.length; i++) if (messages[start + i] !== m.root[i]) return undefined;
  if (m.note === undefined) return { view, receipts: [] };
  const out = messages.slice();
  for (let i = 0; i < m.out.length; i++) out[start + i] = m.out[i];
  return {
    view: { ...view, body: { ...view.body, messages: out }, notes: [...view.notes, m.note] },
    receipts: m.receipts.map((r) => ({ ...r })),
  };
}

export function relocateVolatile(view: RequestView, ctx: StageContext): StageResult {
  const stored = readSlot(view.session, VOLATILE_SLOT);
  const hit = memoised(view, ctx, stored);
  if (hit) return hit;
  const r = relocateRoot(view, ctx, stored);
  const written = readSlot(view.session, VOLATILE_SLOT);
  const { start, end } = view.segments.root;
  if (written)
    rootMemo.set(written, {
      root: view.body.messages.slice(start, end),
      start,
      eager: ctx.transforms?.[VOLATILE_STAGE] === 'eager',
      opening: !view.body.messages.some((x) => x.role === 'assistant'),
      tokenizer: ctx.tokenizer,
      out: r.view.body.messages.slice(start, end),
      note: r.view.notes.length > view.notes.length ? r.view.notes[r.view.notes.length - 1] : undefined,
      receipts: r.receipts.map((x) => ({ ...x })),
    });
  return r;
}

function relocateRoot(view: RequestView, ctx: StageContext, stored: VolatileState | undefined): StageResult {
  const state = stored ?? { prev: {}, learned: {} };
  const eager = ctx.transforms?.[VOLATILE_STAGE] === 'eager';
  const prev = ctx.newSession ? {} : state.prev;
  const learned: Record<string, number[]> = ctx.newSession ? {} : { ...state.learned };
  const nextPrev: Record<string, string[]> = {};
  const moved: Moved[] = [];
  const messages = view.body.messages.slice();
  const { start, end } = view.segments.root;

  // Rank of each line among the root's lines of the same shape (and how many there are): the key.
  const shapeCount = new Map<string, number>();
  const all: { mi: number; ti: number; li: number; line: string; shape: string }[] = [];
  const texts = messages.map((m, mi) => (mi >= start && mi < end ? textsOf(m) : undefined));
  texts.forEach((ts, mi) =>
    ts?.forEach((t, ti) =>
      t.split('\n').forEach((line, li) => {
        if (line.trim() === '') return;
        const shape = h(lineShape(line));
        shapeCount.set(shape, (shapeCount.get(shape) ?? 0) + 1);
        all.push({ mi, ti, li, line, shape });
      }),
    ),
  );
  const rank = new Map<string, number>();
  const edits = new Map<string, Map<number, Moved>>(); // `${mi}/${ti}` → line index → decision
  for (const { mi, ti, li, line, shape } of all) {
    const r = rank.get(shape) ?? 0;
    rank.set(shape, r + 1);
    const key = `${shape}#${r}/${shapeCount.get(shape)}`;
    const { known, runs } = observeLine(key, line, prev, learned, nextPrev);
    let decision: Moved | undefined;
    if (known?.length) {
      if (known.includes(-1) || known.some((k) => k >= runs.length))
        decision = {
          text: line,
          values: [trimSpan(line, { start: 0, end: line.length })],
          why: 'line changes between calls of this session',
        };
      else {
        const spans = changingSpans(
          line,
          known.map((k) => runs[k]),
        );
        decision =
          wordsOutside(line, spans) <= LABEL_MAX_WORDS
            ? { text: line, values: spans, why: 'label line changes between calls of this session' }
            : { text: line, spans, values: spans, why: 'values in this line change between calls of this session' };
      }
    } else if (eager) {
      const spans = eagerLabelSpans(line);
      if (spans) decision = { text: line, values: spans, why: EAGER_WHY };
    }
    if (!decision) continue;
    const at = `${mi}/${ti}`;
    if (!edits.has(at)) edits.set(at, new Map());
    edits.get(at)!.set(li, decision);
  }
  pruneLearned(learned, nextPrev);
  writeSlot(view.session, VOLATILE_SLOT, { prev: nextPrev, learned });
  // A conversation's opening call (no assistant turn yet) is an agent's first call even when an
  // identical opening shares this session (parallel agents fork later): it passes unchanged,
  // learning only. With eager, only its eager label lines move.
  const opening = !view.body.messages.some((m) => m.role === 'assistant');
  if (opening) {
    for (const [at, byLine] of edits) {
      for (const [li, d] of byLine) {
        const label = eager ? eagerLabelSpans(d.text) : undefined;
        if (label) byLine.set(li, { text: d.text, values: label, why: EAGER_WHY });
        else byLine.delete(li);
      }
      if (byLine.size === 0) edits.delete(at);
    }
  }
  if (edits.size === 0) return { view, receipts: [] };

  for (const [at, byLine] of edits) {
    const [mi, ti] = at.split('/').map(Number);
    const ts = texts[mi]!.slice();
    const lines = ts[ti].split('\n');
    // Never empty a root text: if every non-empty line would leave, whole moves keep a placeholder.
    const leavesNothing = lines.every((l, li) => l.trim() === '' || (byLine.has(li) && !byLine.get(li)!.spans));
    const kept: string[] = [];
    lines.forEach((l, li) => {
      const d = byLine.get(li);
      if (!d) return void kept.push(l);
      if (!d.spans && leavesNothing) d.spans = d.values;
      moved.push(d);
      if (d.spans) kept.push(withPlaceholders(l, d.spans));
    });
    ts[ti] = kept.join('\n');
    texts[mi] = ts;
    messages[mi] = withTexts(messages[mi], ts);
  }
  const receipts: Receipt[] = moved.map((v) => ({
    stage: VOLATILE_STAGE,
    action: v.spans ? 'placeholder' : 'relocate',
    target: v.text.length > 80 ? v.text.slice(0, 77) + '…' : v.text,
    tokens_before: ctx.tokenizer.countTokens(v.text),
    tokens_after: 0,
    reason: v.spans
      ? `${v.why}; the line stays with a placeholder, in full in the leaf note`
      : `${v.why}; moved whole to the leaf note`,
  }));
  const note = [VOLATILE_NOTE_HEADER, ...moved.map((v) => v.text)].join('\n');
  return { view: { ...view, body: { ...view.body, messages }, notes: [...view.notes, note] }, receipts };
}

/** The span without the line's leading/trailing whitespace (indentation stays in the root). */
function trimSpan(line: string, sp: Span): Span {
  const lead = line.length - line.trimStart().length;
  const trail = line.length - line.trimEnd().length;
  return { start: sp.start + lead, end: Math.max(sp.start + lead, sp.end - trail) };
}

/** Root lines, then tool definitions (volatile-tools.ts): one stage, one switch. */
export const volatileStage: Stage = {
  name: VOLATILE_STAGE,
  run(view, ctx) {
    const root = relocateVolatile(view, ctx);
    const tools = relocateToolVolatility(root.view, ctx);
    return { view: tools.view, receipts: [...root.receipts, ...tools.receipts] };
  },
};
