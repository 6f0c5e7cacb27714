// The render memo keeps its window text packed in bytes (tokens/incremental-render.ts): packing must
// give back the same string for any text (lone surrogates included), also after a structured clone
// (the memo crosses to render-pool threads and back).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { packText, unpackText } from '../../middleware/tokens/incremental-render.ts';

describe('packed text', () => {
  it('round-trips any string, also through a structured clone', () => {
    const text = fc.oneof(
      fc.string({ maxLength: 300 }),
      fc.string({ unit: 'binary', maxLength: 300 }),
      fc.string({ unit: 'grapheme', maxLength: 100 }),
      fc.constantFrom('', 'é', '\ud800', 'a\udc00b', '<|im_start|>user\nok<|im_end|>\n', 'x'.repeat(5000) + '\u00ff'),
    );
    fc.assert(
      fc.property(text, (s) => {
        const p = packText(s);
        expect(unpackText(p)).toBe(s);
        expect(unpackText(structuredClone(p))).toBe(s);
        // ASCII packs one byte a character; anything else two (latin1 would lose what is above U+00FF).
        expect(p.bytes.byteLength).toBe(/^[\x00-\x7f]*$/.test(s) ? s.length : 2 * s.length);
      }),
      { numRuns: 500, seed: 17 },
    );
  });
});
