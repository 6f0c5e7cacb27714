// BPE on hostile input: a 100k-character run without spaces is encoded in bounded pieces (the JS
// ports' merge loop is quadratic in a pre-token's length). Ids round-trip to the same text, and
// ordinary text encodes exactly as before.
import { describe, expect, it } from 'vitest';
import { encodeBounded, MAX_RUN_CHARS } from '../../middleware/tokens/long-runs.ts';
import { loadTokenizer } from '../../middleware/tokens/registry.ts';

describe('long pre-tokens', () => {
  it('cuts only runs longer than MAX_RUN_CHARS, and every piece stays short', () => {
    const seen: string[] = [];
    const text = `x = 1\n${'a'.repeat(10_000)} mid ${'='.repeat(5_000)} end \u{1F600}${'é'.repeat(600)}`;
    const out = encodeBounded(text, (s) => {
      seen.push(s);
      return [s.length];
    });
    expect(seen.join('')).toBe(text);
    expect(out.reduce((a, b) => a + b, 0)).toBe(text.length);
    for (const s of seen) expect(s.replace(/[^a-z=é]/g, '').length).toBeLessThanOrEqual(MAX_RUN_CHARS);
    const plain = 'def add(a, b):\n    return a + b\n'.repeat(50);
    seen.length = 0;
    encodeBounded(plain, (s) => {
      seen.push(s);
      return [];
    });
    expect(seen).toEqual([plain]);
  });

  it('qwen3: 100k letters without spaces and ordinary text round-trip', async () => {
    const tok = await loadTokenizer('qwen3');
    const hostile = 'q'.repeat(100_000) + ' and ' + '#'.repeat(20_000);
    expect(tok.decode(tok.encode(hostile))).toBe(hostile);
    const normal = 'Fix the failing test in services/auth_token.py:142 — see TS2345.\n'.repeat(40);
    expect(tok.decode(tok.encode(normal))).toBe(normal);
    expect(tok.encode(hostile).length).toBeLessThan(hostile.length);
  });
});
