// Prompt ids that grow in place (tokens/ids-arena.ts): a call's ids extend its predecessor's buffer
// only past the buffer's written part, so every view handed out before keeps its values; a fork, a
// retry or a tail that does not begin with the previous ids' last ones gets a copy. Through
// tokenizeBySegments, chains of growing texts with forks must give exactly the ids of whole-text
// encoding and of the copying path, and leave every earlier call's ids as they were.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { extendInPlace, grownIds, pinnedIds } from '../../middleware/tokens/ids-arena.ts';
import { loadTokenizer } from '../../middleware/tokens/registry.ts';
import { type SegmentTokens, tokenizeBySegments } from '../../middleware/tokens/segment-tokens.ts';

function filled(values: number[]): Uint32Array {
  const ids = grownIds(values.length);
  ids.set(values);
  return ids;
}

/** The buffer's bytes after `from` ids (what an extension must not have written on a refusal). */
function bytesPast(ids: Uint32Array, from: number): number[] {
  return Array.from(new Uint32Array(ids.buffer, from * 4));
}

describe('ids arena', () => {
  it('weighs a kept view by the ids its buffer pins, room included (the local cache charges this)', () => {
    const short = grownIds(98);
    expect(short.length).toBe(98);
    expect(pinnedIds(short)).toBeGreaterThanOrEqual(98 + 2048);
    expect(pinnedIds(short)).toBe(short.buffer.byteLength / 4);
    const long = grownIds(40_000);
    expect(pinnedIds(long)).toBeGreaterThanOrEqual(50_000);
    expect(pinnedIds(new Uint32Array(98))).toBe(98);
    const grown = extendInPlace(short, 98, 120, [new Uint32Array(22)])!;
    expect(pinnedIds(grown)).toBe(pinnedIds(short));
  });

  it('extends the written end in place, only past it, and refuses a second extension of the same ids', () => {
    const prev = filled([1, 2, 3, 4]);
    const next = extendInPlace(prev, 2, 7, [[3, 4, 5], new Uint32Array([6, 7])]);
    expect(next).toBeDefined();
    expect(next!.buffer).toBe(prev.buffer);
    expect(Array.from(next!)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(Array.from(prev)).toEqual([1, 2, 3, 4]);
    // A fork of prev (its buffer already extended past it) must not overwrite next's ids.
    expect(extendInPlace(prev, 4, 6, [[8, 9]])).toBeUndefined();
    expect(Array.from(next!)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    // next is the written end: it extends.
    expect(Array.from(extendInPlace(next!, 7, 8, [[10]])!)).toEqual([1, 2, 3, 4, 5, 6, 7, 10]);
  });

  it('refuses, writing nothing, when the tail does not begin with the previous ids or there is no room', () => {
    const prev = filled([1, 2, 3, 4]);
    const before = bytesPast(prev, 4);
    expect(extendInPlace(prev, 2, 6, [[3, 9, 5, 6]])).toBeUndefined();
    expect(bytesPast(prev, 4)).toEqual(before);
    const room = prev.buffer.byteLength / 4;
    expect(extendInPlace(prev, 4, room + 1, [new Uint32Array(room + 1 - 4)])).toBeUndefined();
    // shorter than the previous ids, a plain array's buffer, a view not at offset 0
    expect(extendInPlace(prev, 2, 3, [[3]])).toBeUndefined();
    expect(extendInPlace(new Uint32Array([1, 2]), 2, 3, [[3]])).toBeUndefined();
    expect(extendInPlace(new Uint32Array(prev.buffer, 4, 3), 3, 4, [[5]])).toBeUndefined();
    // and still extends after all those refusals
    expect(Array.from(extendInPlace(prev, 3, 5, [[4, 5]])!)).toEqual([1, 2, 3, 4, 5]);
  });

  it('extendInPlace equals prev[0, keep) ‖ runs on random runs (packed and plain, split anywhere across the written end)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.nat(50), { minLength: 1, maxLength: 12 }),
        fc.nat(12),
        fc.array(fc.nat(50), { maxLength: 20 }),
        fc.array(fc.tuple(fc.nat(6), fc.boolean()), { maxLength: 10 }),
        fc.boolean(),
        (values, keepAt, extra, cuts, matching) => {
          const prev = filled(values);
          const keep = keepAt % (values.length + 1);
          // The tail begins with prev[keep, end) (or a changed copy of it), then new ids, cut into
          // runs at random places, each packed or plain.
          const overlap = values.slice(keep).map((v, i) => (matching || i > 0 ? v : v + 1));
          const tail = [...overlap, ...extra];
          const runs: (number[] | Uint32Array)[] = [];
          let at = 0;
          for (const [len, packed] of cuts) {
            const part = tail.slice(at, at + len);
            at += part.length;
            runs.push(packed ? Uint32Array.from(part) : part);
          }
          if (at < tail.length) runs.push(tail.slice(at));
          const want = [...values.slice(0, keep), ...tail];
          const before = bytesPast(prev, values.length);
          const got = extendInPlace(prev, keep, want.length, runs);
          if (!matching && overlap.length > 0) {
            expect(got).toBeUndefined();
            expect(bytesPast(prev, values.length)).toEqual(before);
            return;
          }
          expect(got).toBeDefined();
          expect(Array.from(got!)).toEqual(want);
          expect(Array.from(prev)).toEqual(values);
        },
      ),
    );
  });

  it('tokenizeBySegments with grow: ids equal whole-text encoding over chains with forks; earlier ids never change', async () => {
    const tok = await loadTokenizer('qwen3');
    const chunk = fc.oneof(
      fc.constantFrom('<|im_start|>', '<|im_end|>', '\n', 'user\n', 'assistant\n', '<tool_call>', ' ', '  x'),
      fc.string({ maxLength: 12 }),
    );
    const part = fc.array(chunk, { maxLength: 8 }).map((xs) => xs.join(''));
    // Each step appends a part to the text of an earlier step (the last one, or a fork of an older one).
    const step = fc.record({ part, from: fc.nat(), fork: fc.boolean() });
    await fc.assert(
      fc.property(fc.array(step, { minLength: 1, maxLength: 12 }), (steps) => {
        const texts = ['<|im_start|>user\nhi<|im_end|>\n'];
        const made: SegmentTokens[] = [tokenizeBySegments(tok, texts[0])];
        const seen: number[][] = [Array.from(made[0].ids)];
        for (const s of steps) {
          const base = s.fork ? s.from % texts.length : texts.length - 1;
          const text = texts[base] + s.part;
          const reuse = { ids: made[base].ids, cuts: made[base].cuts, sharedChars: texts[base].length };
          const grown = tokenizeBySegments(tok, text, text.length, { ...reuse, grow: true });
          const copied = tokenizeBySegments(tok, text, text.length, reuse);
          expect(Array.from(grown.ids)).toEqual(tok.encode(text));
          expect(grown.ids).toEqual(copied.ids);
          texts.push(text);
          made.push(grown);
          seen.push(Array.from(grown.ids));
        }
        made.forEach((m, i) => expect(Array.from(m.ids)).toEqual(seen[i]));
      }),
      { numRuns: 120 },
    );
  });

  it('a growing session extends one buffer call after call', async () => {
    const tok = await loadTokenizer('qwen3');
    let text = '<|im_start|>system\nYou are a coding agent.<|im_end|>\n<|im_start|>user\nFix it.<|im_end|>\n';
    const gen = '<|im_start|>assistant\n';
    let prev = tokenizeBySegments(tok, text + gen);
    let prevText = text;
    const buffers = new Set<ArrayBufferLike>();
    for (let k = 0; k < 20; k++) {
      text += `${gen}<tool_call>\n{"name": "read", "arguments": {"path": "f${k}.py"}}\n</tool_call><|im_end|>\n<|im_start|>user\n<tool_response>\n${'x = 1\n'.repeat(40)}</tool_response><|im_end|>\n`;
      const cur = tokenizeBySegments(tok, text + gen, text.length, {
        ids: prev.ids,
        cuts: prev.cuts,
        sharedChars: prevText.length,
        grow: true,
      });
      expect(Array.from(cur.ids)).toEqual(tok.encode(text + gen));
      buffers.add(cur.ids.buffer);
      prev = cur;
      prevText = text;
    }
    // The first grown call copies into a buffer with room; later calls copy only when the room runs out.
    expect(buffers.size).toBeLessThanOrEqual(3);
  });
});
