// Seam verdicts and side ids (tokens/seam-check.ts): a verdict is what encoding the window says
// (the window's ids equal its sides' ids one after the other), asked first or again, for any pair of
// texts under every bundled tokenizer kind; two pairs whose characters only differ in where the seam
// falls are judged apart; a side's ids are the encoder's (or the id cache's entry) and a fresh side
// is not put into the shared id cache.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { encodeCacheStats, peekEncoded } from '../../middleware/tokens/encode-cache.ts';
import type { TokenizerHandle } from '../../middleware/tokens/handle.ts';
import { loadTokenizer } from '../../middleware/tokens/registry.ts';
import { SEAM_WINDOW_CHARS, seamOk, sideIds } from '../../middleware/tokens/seam-check.ts';

/** The verdict by its definition: the window encoded whole equals its sides encoded apart. */
function reference(tok: TokenizerHandle, left: string, right: string): boolean {
  const l = left.slice(-SEAM_WINDOW_CHARS);
  const r = right.slice(0, SEAM_WINDOW_CHARS);
  return JSON.stringify(tok.encode(l + r)) === JSON.stringify([...tok.encode(l), ...tok.encode(r)]);
}

const PARTS = [
  'hel',
  'lo',
  ' world',
  '\n',
  '\n\n',
  ')',
  '}\n',
  '  ',
  '\t',
  'é',
  '日本',
  '🙂',
  '\u0001',
  'x'.repeat(30),
  '"',
];

describe('seam verdicts', () => {
  for (const tokenizer of ['qwen3', 'llama3_1', 'deepseek_v3', 'cl100k_base']) {
    it(`${tokenizer}: equal the window's encoding, first asked and again`, async () => {
      const tok = await loadTokenizer(tokenizer);
      const text = fc
        .array(fc.constantFrom(...PARTS, ...tok.specialTokens.slice(0, 4)), { maxLength: 6 })
        .map((a) => a.join(''));
      let merged = 0;
      fc.assert(
        fc.property(text, text, (left, right) => {
          const want = reference(tok, left, right);
          if (!want) merged++;
          expect(seamOk(tok, left, right)).toBe(want);
          expect(seamOk(tok, left, right)).toBe(want);
        }),
        { numRuns: 300, seed: 41 },
      );
      // Both verdicts occur (the property is not met by answering always one way).
      expect(merged).toBeGreaterThan(0);
    });
  }

  it('tells apart two seams over the same characters at different places', async () => {
    const tok = await loadTokenizer('qwen3');
    // Same characters: "a\u0001a" | " " and "a" | "a\u0001 " (a key that only joins the two sides
    // with a separator character makes these one key, so the second would get the first's verdict).
    const first = ['a\u0001a', ' '] as const;
    const second = ['a', 'a\u0001 '] as const;
    const wantFirst = reference(tok, ...first);
    const wantSecond = reference(tok, ...second);
    expect(wantFirst).not.toBe(wantSecond);
    expect(seamOk(tok, ...first)).toBe(wantFirst);
    expect(seamOk(tok, ...second)).toBe(wantSecond);
  });
});

describe('side ids', () => {
  it("are the encoder's ids, memoised without an insert into the shared id cache", async () => {
    const tok = await loadTokenizer('qwen3');
    const before = encodeCacheStats().entries;
    for (let i = 0; i < 50; i++) {
      const side = `fresh side ${i}: x = f(y)\n`;
      const ids = sideIds(tok, side);
      expect(Array.from(ids)).toEqual(tok.encode(side));
      expect(sideIds(tok, side)).toBe(ids);
      expect(peekEncoded(tok.name, side)).toBeUndefined();
    }
    expect(encodeCacheStats().entries).toBe(before);
  });

  it('take the id cache entry when there is one, and go through it for texts too long to memoise', async () => {
    const tok = await loadTokenizer('qwen3');
    const cached = 'a side the ledger counted';
    tok.countTokens(cached);
    expect(sideIds(tok, cached)).toBe(peekEncoded(tok.name, cached));
    const long = `${'a long decoded tail '.repeat(5)}end`;
    expect(Array.from(sideIds(tok, long))).toEqual(tok.encode(long));
    expect(peekEncoded(tok.name, long)).toBeDefined();
  });
});
