// The fast encode's added-token split (middleware/tokens/fast-bpe.ts) finds its candidates by
// indexOf where every added token starts with one character ('<' in the bundled models): the
// library's ids on text dense with added tokens, their prefixes and suffixes, stray and doubled
// '<', at the start, the end and between ASCII and non-ASCII text.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { fastBpeEncoder } from '../../middleware/tokens/fast-bpe.ts';
import { bundledLibraryTokenizer } from '../../middleware/tokens/library-tokenizer.ts';

describe('added tokens found by indexOf', () => {
  for (const spec of ['qwen3', 'llama3_1']) {
    it(`${spec}: the library's ids around added tokens and stray '<'`, () => {
      const lib = bundledLibraryTokenizer(spec);
      const fast = fastBpeEncoder(lib.tok)!;
      expect(fast).toBeDefined();
      // every added token starts with '<' here: the indexOf path is the one tested
      expect(new Set(lib.added.map((t) => t[0]))).toEqual(new Set(['<']));
      const some = lib.added.filter((_, i) => i % Math.ceil(lib.added.length / 40) === 0);
      const piece = fc.oneof(
        fc.constantFrom(...some),
        fc.constantFrom(...some).chain((t) => fc.integer({ min: 1, max: t.length - 1 }).map((k) => t.slice(0, k))),
        fc.constantFrom(...some).chain((t) => fc.integer({ min: 1, max: t.length - 1 }).map((k) => t.slice(k))),
        fc.constantFrom('<', '<<', '< ', ' <', '<|', '|>', '<\n', 'a', ' b', '\n', 'é', '中', '1'),
      );
      const texts = fc.sample(
        fc.array(piece, { maxLength: 10 }).map((xs) => xs.join('')),
        { numRuns: 3000 },
      );
      for (const x of [...texts, '<', '<<', 'x<', '<x', ...some.map((t) => `<${t}<`)])
        expect(fast(x), JSON.stringify(x)).toEqual(lib.encode(x));
    }, 120_000);
  }
});
