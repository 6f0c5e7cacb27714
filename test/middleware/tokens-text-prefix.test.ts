// hasPrefix / hasSuffix answer what String.prototype.startsWith / endsWith answer (they replace them
// on long strings, where the built-ins compare a character at a time): generated strings over a
// small alphabet (so prefixes often match) with astral characters and lone surrogates, cons strings
// built by concatenation, and the empty string on either side. Seeded: the same cases every run.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { hasPrefix, hasSuffix } from '../../middleware/tokens/text-prefix.ts';

const unit = fc.constantFrom('a', 'b', '\n', 'é', '😀', '\ud800', '\udc00', '<|im_end|>');
const text = fc.array(unit, { maxLength: 40 }).map((xs) => xs.join(''));

describe('hasPrefix / hasSuffix', () => {
  it('agree with startsWith / endsWith', () => {
    fc.assert(
      fc.property(text, text, text, (a, b, c) => {
        const s = a + b + c;
        for (const p of [a, a + b, b, b + c, c, s, `${s}x`, '', s.slice(1), s.slice(0, -1)]) {
          expect(hasPrefix(s, p)).toBe(s.startsWith(p));
          expect(hasSuffix(s, p)).toBe(s.endsWith(p));
        }
      }),
      { seed: 20261201, numRuns: 500 },
    );
  });

  it('compare long renderings that differ in one code unit, first, middle or last', () => {
    let s = '';
    for (let i = 0; i < 2000; i++) s += `line ${i}\n`;
    for (const at of [0, s.length >> 1, s.length - 1]) {
      const t = `${s.slice(0, at)}\u0000${s.slice(at + 1)}`;
      expect(hasPrefix(`${s}tail`, t)).toBe(false);
      expect(hasSuffix(`head${s}`, t)).toBe(false);
      expect(hasPrefix(`${s}tail`, s)).toBe(true);
      expect(hasSuffix(`head${s}`, s)).toBe(true);
    }
  });
});
