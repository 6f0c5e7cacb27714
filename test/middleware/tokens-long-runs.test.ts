// BPE on hostile input: a 100k-character run without spaces is encoded in bounded pieces (the JS
// ports' merge loop is quadratic in a pre-token's length). Ids round-trip to the same text, and
// ordinary text encodes exactly as before.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { encodeBounded, MAX_RUN_CHARS, mayHoldLongRun } from '../../middleware/tokens/long-runs.ts';
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

  it('the pre-scan never misses a run the regex cuts (runs around the limit, ASCII and Unicode blanks)', () => {
    const longRun = new RegExp(
      `[\\p{L}\\p{M}]{${MAX_RUN_CHARS + 1},}|[^\\s\\p{L}\\p{M}\\p{N}]{${MAX_RUN_CHARS + 1},}`,
      'u',
    );
    const run = fc
      .tuple(fc.constantFrom('a', 'é', 'e\u0301', '中', '=', '#', '-', '1', '🙂'), fc.integer({ min: 0, max: 300 }))
      .map(([c, n]) => c.repeat(n));
    const blank = fc.constantFrom(' ', '\n', '\t', '\r\n', '\u00a0', '\u2028', '\u3000', '\ufeff', '');
    let cut = 0;
    fc.assert(
      fc.property(fc.array(fc.tuple(run, blank), { maxLength: 6 }), (parts) => {
        const text = parts.map(([r, b]) => r + b).join('');
        const has = longRun.test(text);
        if (has) cut++;
        expect(!has || mayHoldLongRun(text), JSON.stringify(text.slice(0, 80))).toBe(true);
      }),
      { seed: 17, numRuns: 3000 },
    );
    expect(cut, 'some texts hold a run to cut').toBeGreaterThan(100);
    for (const n of [MAX_RUN_CHARS, MAX_RUN_CHARS + 1])
      for (const c of ['a', '='])
        expect(mayHoldLongRun(` ${c.repeat(n)} `), `${c} x ${n}`).toBe(longRun.test(` ${c.repeat(n)} `));
  });

  it('the strided pre-scan answers as a scan of every character, wherever the runs fall', () => {
    // The plain scan it replaced: every code unit read, ASCII blanks end a run.
    const everyChar = (text: string): boolean => {
      let run = 0;
      for (let i = 0; i < text.length; i++) {
        const c = text.charCodeAt(i);
        if (c === 32 || (c >= 9 && c <= 13)) run = 0;
        else if (++run > MAX_RUN_CHARS) return true;
      }
      return false;
    };
    const run = fc.integer({ min: 0, max: 2 * MAX_RUN_CHARS + 4 }).map((n) => 'x'.repeat(n));
    const blank = fc.constantFrom(' ', '\n', '\t', '\r', '\v', '\f', '\u00a0', '');
    let long = 0;
    fc.assert(
      fc.property(fc.array(fc.tuple(run, blank), { maxLength: 8 }), (parts) => {
        const text = parts.map(([r, b]) => r + b).join('');
        const want = everyChar(text);
        if (want) long++;
        expect(mayHoldLongRun(text), `${text.length} chars`).toBe(want);
      }),
      { seed: 30, numRuns: 4000 },
    );
    expect(long, 'some texts hold a long run').toBeGreaterThan(500);
    // Runs of exactly MAX_RUN_CHARS and one more, at every offset around the first probes.
    for (const n of [MAX_RUN_CHARS, MAX_RUN_CHARS + 1])
      for (let at = 0; at < 2 * MAX_RUN_CHARS + 4; at++) {
        const text = `${'ab '.repeat(at).slice(0, at)} ${'y'.repeat(n)} ${'cd '.repeat(200)}`;
        expect(mayHoldLongRun(text), `run of ${n} at ${at}`).toBe(everyChar(text));
      }
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
