// The ASCII piece scan (middleware/tokens/ascii-split.ts) must give, at every piece start, the end
// of the library's own Split-pattern match, or ask the regex: exhaustively on short strings of
// ASCII and of characters at each class's boundary, on generated text (contractions in either case,
// digit runs around Llama 3's three, whitespace and newline runs, non-ASCII letters, digits, blanks,
// marks and symbols beside ASCII), and the fast encode built on it must give the library's ids.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  ASK_REGEX,
  asciiPieceEnd,
  asciiSplitDigits,
  LLAMA3_SPLIT_SOURCE,
  QWEN_SPLIT_SOURCE,
} from '../../middleware/tokens/ascii-split.ts';
import { fastBpeEncoder } from '../../middleware/tokens/fast-bpe.ts';
import { bundledLibraryTokenizer } from '../../middleware/tokens/library-tokenizer.ts';

const SPECS = [
  ['qwen3', QWEN_SPLIT_SOURCE, 1],
  ['llama3_1', LLAMA3_SPLIT_SOURCE, 3],
] as const;

/** Characters at the edges of the pattern's classes: ASCII of every class, and non-ASCII ones that
 *  are letters, marks, digits, blanks, line separators, symbols, and halves of a surrogate pair. */
const EDGE = [
  "'",
  's',
  'S',
  't',
  'r',
  'E',
  'v',
  'l',
  'L',
  'm',
  'd',
  'x',
  'Z',
  '0',
  '9',
  ' ',
  '\t',
  '\n',
  '\r',
  '\v',
  '\f',
  '\u001c',
  '\u001f',
  '\u007f',
  '\u0000',
  '.',
  '(',
  '_',
  '`',
  '~',
  '<',
  '\u0080',
  '\u0085',
  '\u00a0',
  '\u00aa',
  '\u00b2',
  'é',
  'ſ',
  'K',
  '\u0301',
  '\u0663',
  '\u1680',
  '\u2028',
  '\u3000',
  '\ufeff',
  '©',
  '中',
  '\ud83d',
  '\ude42',
];

/** The library's pattern compiled as the fast encoder walks it (sticky). */
function sticky(source: string): RegExp {
  return new RegExp(source, 'uy');
}

/** Walks `x` piece by piece with the regex; at each start the scan must agree or ask. Returns how
 *  many pieces the scan answered itself (not ASK_REGEX) minus how many there are: 0 when it
 *  answered every one. */
function agree(re: RegExp, digits: number, x: string): number {
  let answered = 0;
  let pieces = 0;
  for (let at = 0; at < x.length; pieces++) {
    re.lastIndex = at;
    if (!re.test(x)) throw new Error(`the pattern matches nothing at ${at} of ${JSON.stringify(x)}`);
    const want = re.lastIndex;
    const got = asciiPieceEnd(x, at, digits);
    if (got !== ASK_REGEX) {
      answered++;
      if (got !== want) expect.fail(`${JSON.stringify(x)} at ${at}: scan ${got}, regex ${want}`);
    }
    at = want;
  }
  return answered - pieces;
}

const libraries = new Map<string, ReturnType<typeof bundledLibraryTokenizer>>();
/** Each library tokenizer loaded once for the file (~1-3 s a load). */
function library(spec: string): ReturnType<typeof bundledLibraryTokenizer> {
  let lib = libraries.get(spec);
  if (lib === undefined) libraries.set(spec, (lib = bundledLibraryTokenizer(spec)));
  return lib;
}

const ASCII = Array.from({ length: 128 }, (_, c) => String.fromCharCode(c));

const piece = fc.oneof(
  fc.constantFrom(...EDGE),
  fc.constantFrom("'s", "'S", "'t", "'re", "'RE", "'rE", "'ve", "'m", "'ll", "'Ll", "'d", "'x", "''", "'"),
  fc.constantFrom('1', '12', '123', '1234', '12345', '3.14', '0x1f', '٣٤', '1²'),
  fc.constantFrom(' ', '  ', '   ', '\t', '\n', '\n\n', '\r\n', ' \n', '\n ', ' \n \n  ', '\t\n', '\u00a0 '),
  fc.constantFrom('def', ' self', '.append', '->', '===', '"""', '):\n', ' (', ' .', ' 1', 'naïve', 'e\u0301'),
  fc.string({ unit: fc.constantFrom(...ASCII), maxLength: 8 }),
  fc.string({ maxLength: 6 }),
  fc.string({ unit: 'grapheme', maxLength: 4 }),
  fc.string({ unit: 'binary', maxLength: 3 }),
);
const text = fc.array(piece, { maxLength: 16 }).map((xs) => xs.join(''));
const asciiText = fc
  .array(fc.oneof(piece.filter((p) => /^[\x00-\x7f]*$/.test(p))), { maxLength: 16 })
  .map((xs) => xs.join(''));

describe('ASCII piece scan of the Qwen and Llama 3 split pattern', () => {
  it("recognises the library's compiled patterns, and no other", () => {
    for (const [spec, source, digits] of SPECS) {
      const lib = library(spec);
      const split = (lib.tok as { pre_tokenizer: { tokenizers: { pattern: RegExp }[] } }).pre_tokenizer.tokenizers[0];
      // The library's own pattern is the one the scan was written from: a new library release
      // that compiles it otherwise fails here (and the scan turns itself off: digits 0).
      expect(split.pattern.source).toBe(source);
      expect(asciiSplitDigits(split.pattern)).toBe(digits);
    }
    expect(asciiSplitDigits(new RegExp(QWEN_SPLIT_SOURCE, 'giu'))).toBe(0);
    expect(asciiSplitDigits(new RegExp(QWEN_SPLIT_SOURCE, 'g'))).toBe(0);
    expect(asciiSplitDigits(new RegExp(`${QWEN_SPLIT_SOURCE}|x`, 'gu'))).toBe(0);
    expect(asciiSplitDigits(/\p{N}{1,3}/gu)).toBe(0);
  });

  for (const [spec, source, digits] of SPECS) {
    const re = sticky(source);

    it(`${spec}: every string of up to 2 ASCII characters, and up to 3 of ${EDGE.length} class-edge ones`, () => {
      // every piece of an ASCII string is answered by the scan, none asked of the regex
      for (const a of ASCII) {
        expect(agree(re, digits, a)).toBe(0);
        for (const b of ASCII) expect(agree(re, digits, a + b)).toBe(0);
      }
      for (const a of EDGE)
        for (const b of EDGE) {
          agree(re, digits, a + b);
          for (const c of EDGE) agree(re, digits, a + b + c);
        }
    });

    it(`${spec}: generated text, piece by piece; ASCII text never needs the regex`, () => {
      fc.assert(
        fc.property(text, (x) => {
          agree(re, digits, x);
        }),
        { numRuns: 4000 },
      );
      fc.assert(
        fc.property(asciiText, (x) => {
          expect(agree(re, digits, x)).toBe(0);
        }),
        { numRuns: 2000 },
      );
    });

    it(`${spec}: the fast encode with the scan gives the library's ids`, () => {
      const lib = library(spec);
      const fast = fastBpeEncoder(lib.tok)!;
      expect(fast).toBeDefined();
      const samples = fc.sample(fc.oneof(text, asciiText), { numRuns: 3000 });
      // twice: the second pass reads the memo and the one-character table
      for (const pass of [0, 1])
        for (const x of samples) expect(fast(x), `pass ${pass}: ${JSON.stringify(x)}`).toEqual(lib.encode(x));
    }, 120_000);
  }
});
