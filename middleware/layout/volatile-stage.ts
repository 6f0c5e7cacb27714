// Volatile relocation (DESIGN §2): volatile lines of the root (clock, request ids, counters, lines
// that change between calls) leave the system prompt and travel in the single leaf note after the
// history, so the root stays byte-stable and cached. Nothing is dropped: the note carries every
// moved line verbatim. O(root length) per call; session state keeps only line-shape hashes.
import { createHash } from 'node:crypto';
import type { RequestView, Stage, StageContext, StageResult } from '../stage.ts';
import type { ChatMessage, ContentPart, Receipt } from '../types.ts';
import { findVolatileLines, lineShape, stripVolatile, volatileEntry, type VolatileLine } from './volatile-spans.ts';

export const VOLATILE_STAGE = 'volatile';
export const VOLATILE_NOTE_HEADER = '[ctxgate] moved from the system prompt (volatile, changes between calls):';

interface VolatileState {
  /** shape hash → line hash of the previous call's root lines. */
  prev: Record<string, string>;
  /** Shape hashes already seen changing in this session. */
  learned: string[];
}

const h = (s: string): string => createHash('sha1').update(s).digest('base64').slice(0, 12);

function textOf(m: ChatMessage): string[] | undefined {
  if (typeof m.content === 'string') return [m.content];
  if (Array.isArray(m.content)) return m.content.map((p: ContentPart) => (typeof p.text === 'string' ? p.text : ''));
  return undefined;
}

function withTexts(m: ChatMessage, texts: string[]): ChatMessage {
  if (typeof m.content === 'string') return { ...m, content: texts[0] };
  const parts = (m.content as ContentPart[]).map((p, i) => (typeof p.text === 'string' ? { ...p, text: texts[i] } : p));
  return { ...m, content: parts };
}

export function relocateVolatile(view: RequestView, ctx: StageContext): StageResult {
  const layout = (view.session.layout ??= {});
  const state = (layout.volatile as VolatileState | undefined) ?? { prev: {}, learned: [] };
  const prevShapes = ctx.newSession || Object.keys(state.prev).length === 0 ? undefined : state.prev;
  const learned = new Set(state.learned);
  const nextPrev: Record<string, string> = {};
  const moved: VolatileLine[] = [];
  const receipts: Receipt[] = [];
  const messages = view.body.messages.slice();
  for (let mi = view.segments.root.start; mi < view.segments.root.end; mi++) {
    const texts = textOf(messages[mi]);
    if (!texts) continue;
    let changedHere = false;
    const newTexts = texts.map((text) => {
      const lines = text.split('\n');
      const byIndex = new Map<number, VolatileLine>();
      for (const v of findVolatileLines(lines, undefined, new Set())) byIndex.set(v.index, v);
      // Changed-line detection compares hashes: the state never holds the prompt text itself.
      for (let i = 0; i < lines.length; i++) {
        if (lines[i].trim().length === 0) continue;
        const shape = h(lineShape(lines[i]));
        const line = h(lines[i]);
        nextPrev[shape] = line;
        const before = prevShapes?.[shape];
        if (learned.has(shape) || (before !== undefined && before !== line)) {
          learned.add(shape);
          byIndex.set(i, volatileEntry(i, lines[i], 'changed'));
        }
      }
      if (byIndex.size === 0) return text;
      const found = [...byIndex.values()].sort((a, b) => a.index - b.index);
      moved.push(...found);
      changedHere = true;
      return stripVolatile(lines, found);
    });
    if (changedHere) messages[mi] = withTexts(messages[mi], newTexts);
  }
  layout.volatile = { prev: nextPrev, learned: [...learned].sort() } satisfies VolatileState;
  if (moved.length === 0) return { view, receipts };
  for (const v of moved) {
    receipts.push({
      stage: VOLATILE_STAGE,
      action: 'relocate',
      target: v.text.length > 80 ? v.text.slice(0, 77) + '…' : v.text,
      tokens_before: ctx.tokenizer.countTokens(v.text),
      tokens_after: 0,
      reason: v.reason === 'changed' ? 'line changes between calls of this session' : `looks volatile (${v.pattern})`,
    });
  }
  const note = [VOLATILE_NOTE_HEADER, ...moved.map((v) => v.text)].join('\n');
  return { view: { ...view, body: { ...view.body, messages }, notes: [...view.notes, note] }, receipts };
}

export const volatileStage: Stage = { name: VOLATILE_STAGE, run: relocateVolatile };
