// The byte-level memo is exact: for every bundled HF tokenizer, ids of texts made of repeated
// words, code, whitespace runs, unicode (combining marks, emoji, CJK) and special-token strings
// equal those of the same tokenizer loaded without the memo, on the first encode (misses) and on
// repeats (hits); the memo stays bounded and returns copies callers cannot corrupt.
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { TokenizerLoader } from '@lenml/tokenizers';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { memoiseByteLevel } from '../../middleware/tokens/byte-level-memo.ts';
import { PIECE_MEMO_ENTRY_BYTES, PIECE_MEMO_MAX_BYTES } from '../../middleware/tokens/piece-memo.ts';
import { BUNDLED_TOKENIZERS } from '../../middleware/tokens/registry.ts';

const require = createRequire(import.meta.url);

function load(spec: string) {
  const dir = resolve(require.resolve(`@lenml/tokenizer-${spec}/models/tokenizer.json`), '..');
  const json = (f: string) => JSON.parse(readFileSync(resolve(dir, f), 'utf8'));
  const make = () =>
    TokenizerLoader.fromPreTrained({
      tokenizerJSON: json('tokenizer.json'),
      tokenizerConfig: json('tokenizer_config.json'),
    });
  return { plain: make(), memo: make() };
}

const WORDS = [
  'def',
  ' self',
  '    ',
  '\n',
  '\t',
  'return',
  ' x_1',
  '==',
  ' é',
  'e\u0301',
  '日本語',
  ' 🙂',
  '123456',
  "'s",
  '<|im_end|>',
  '  \n\n',
  'ÿ',
];

describe('byte-level memo', () => {
  for (const spec of BUNDLED_TOKENIZERS) {
    it(`${spec}: ids equal the unmemoised tokenizer's, first time and repeated`, () => {
      const { plain, memo } = load(spec);
      expect(memoiseByteLevel((memo as unknown as { pre_tokenizer: unknown }).pre_tokenizer)).toBeGreaterThan(0);
      const enc = (t: typeof plain, s: string) => t.encode(s, { add_special_tokens: false });
      fc.assert(
        fc.property(
          fc.array(fc.oneof(fc.constantFrom(...WORDS), fc.string({ unit: 'binary', maxLength: 12 })), {
            maxLength: 60,
          }),
          (parts) => {
            const text = parts.join('');
            const want = enc(plain, text);
            expect(enc(memo, text)).toEqual(want);
            expect(enc(memo, text)).toEqual(want); // all hits now
          },
        ),
        { numRuns: 150 },
      );
    });
  }

  it('stays bounded and hands out copies', () => {
    let calls = 0;
    const node = {
      byte_encoder: {},
      text_encoder: {},
      pre_tokenize_text: (s: string) => {
        calls++;
        return [s, s];
      },
    };
    memoiseByteLevel(node);
    const a = node.pre_tokenize_text('ab');
    a.push('x');
    expect(node.pre_tokenize_text('ab')).toEqual(['ab', 'ab']);
    expect(calls).toBe(1);
    // every entry costs more than PIECE_MEMO_ENTRY_BYTES: this many cross the byte bound
    for (let i = 0; i <= PIECE_MEMO_MAX_BYTES / PIECE_MEMO_ENTRY_BYTES; i++) node.pre_tokenize_text(`k${i}`);
    calls = 0;
    node.pre_tokenize_text('ab'); // the generation that held it was dropped
    expect(calls).toBe(1);
  });
});
