// The fast encoder's NFC shortcut (middleware/tokens/fast-bpe.ts nfcSkippingStable): a text with no
// code unit at or above U+0300 skips the library's normalize('NFC'). That is only right if NFC
// changes no such text: checked here on every code point and every ordered pair of code points
// below U+0300 (a change needs a reordering or a composition, both of which show in a pair), and on
// Qwen's own normalizer object, which the shortcut must recognise; other normalizers pass through.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import { TokenizerLoader } from '@lenml/tokenizers';
import { describe, expect, it } from 'vitest';
import { nfcSkippingStable } from '../../middleware/tokens/fast-bpe.ts';

const require = createRequire(import.meta.url);
const STABLE_BELOW = 0x300;

function normalizerOf(spec: string): ((t: string) => string) | null {
  const dir = resolve(require.resolve(`@lenml/tokenizer-${spec}/models/tokenizer.json`), '..');
  const json = (f: string) => JSON.parse(readFileSync(resolve(dir, f), 'utf8')) as Record<string, unknown>;
  const tok = TokenizerLoader.fromPreTrained({
    tokenizerJSON: json('tokenizer.json') as never,
    tokenizerConfig: json('tokenizer_config.json') as never,
  });
  return (tok as unknown as { normalizer: ((t: string) => string) | null }).normalizer;
}

describe('NFC shortcut of the fast encoder', () => {
  it('NFC changes no code point below U+0300 and no pair of them', () => {
    let changed = 0;
    for (let a = 0; a < STABLE_BELOW; a++) {
      const one = String.fromCharCode(a);
      if (one.normalize('NFC') !== one) changed++;
      for (let b = 0; b < STABLE_BELOW; b++) {
        const two = String.fromCharCode(a, b);
        if (two.normalize('NFC') !== two) changed++;
      }
    }
    expect(changed).toBe(0);
    // The bound is tight: the first combining mark composes with a letter before it.
    expect('e\u0300'.normalize('NFC')).not.toBe('e\u0300');
  });

  it("recognises Qwen's NFC normalizer: a stable text comes back as it is, others through the library", () => {
    const lib = normalizerOf('qwen3');
    expect(lib).not.toBeNull();
    // Counts the library's normalize calls on this instance (its callable runs this.normalize).
    const inst = lib as unknown as { normalize: (t: string) => string };
    const normalize = inst.normalize.bind(inst);
    let calls = 0;
    inst.normalize = (t) => {
      calls++;
      return normalize(t);
    };
    const fast = nfcSkippingStable(lib)!;
    expect(fast).not.toBe(lib);
    const code = '  12\tdef parse(self, raw: str) -> dict:  # ÿ ƀ ʯ ˿\n';
    expect(fast(code)).toBe(code);
    expect(calls).toBe(0);
    for (const t of ['cafe\u0301', 'A\u030a', '한국어', '\u1100\u1161', '🙂 e\u0301', 'x\u0300']) {
      expect(fast(t)).toBe(t.normalize('NFC'));
    }
    expect(calls).toBe(6);
  });

  it('leaves any other normalizer, or none, as it is', () => {
    expect(nfcSkippingStable(null)).toBeNull();
    const nfkc = Object.assign((t: string) => t.normalize('NFKC'), { config: { type: 'NFKC' }, form: 'NFKC' });
    expect(nfcSkippingStable(nfkc)).toBe(nfkc);
    const plain = (t: string) => t.trim();
    expect(nfcSkippingStable(plain)).toBe(plain);
    // llama3_1 ships no normalizer
    const llama = normalizerOf('llama3_1');
    expect(nfcSkippingStable(llama)).toBe(llama);
  });
});
