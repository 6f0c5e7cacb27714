// The id cache's packed entries (encode-cache.ts): the tokens stage's entries hold their ids in a
// Uint32Array, with the same values; ids that are no uint32 keep their array; a packed entry read
// through a handle's encodeCached is a frozen number[] of the same ids, and counted without a copy;
// a count's miss is stored packed.
import { describe, expect, it } from 'vitest';
import {
  countCachedWith,
  encodeCachedWith,
  lookupEncoded,
  peekEncoded,
  storeEncoded,
} from '../../middleware/tokens/encode-cache.ts';
import { loadTokenizer } from '../../middleware/tokens/registry.ts';
import { tokenizeBySegments } from '../../middleware/tokens/segment-tokens.ts';

const codes = (t: string) => [...t].map((c) => c.codePointAt(0) as number);

describe('packed id cache entries', () => {
  it('stores uint32 ids packed, others as they are, and reads both back as the same ids', () => {
    storeEncoded('packed-test', 'stored text', [0, 1, 151_000, 2 ** 32 - 1]);
    const stored = peekEncoded('packed-test', 'stored text');
    expect(stored).toBeInstanceOf(Uint32Array);
    expect(Array.from(stored ?? [])).toEqual([0, 1, 151_000, 2 ** 32 - 1]);
    // Through the handle's API: a frozen array of its own, equal.
    const viaApi = encodeCachedWith('packed-test', () => [9], 'stored text');
    expect(Array.isArray(viaApi) && Object.isFrozen(viaApi)).toBe(true);
    expect(viaApi).toEqual([0, 1, 151_000, 2 ** 32 - 1]);
    expect(countCachedWith('packed-test', () => [9], 'stored text')).toBe(4);

    // Values a Uint32Array would change stay an array, unchanged.
    for (const odd of [[1, -1], [1, 2 ** 32], [1.5], [undefined as unknown as number, 3]]) {
      const t = `odd ${JSON.stringify(odd)}`;
      storeEncoded('packed-test', t, odd);
      const got = peekEncoded('packed-test', t);
      expect(Array.isArray(got)).toBe(true);
      expect(got).toEqual(odd);
    }

    // lookupEncoded: packed only when asked; the handle's path stays a frozen array.
    const a = lookupEncoded('packed-test', codes, 'looked up packed', true);
    expect(a.hit).toBe(false);
    expect(a.ids).toBeInstanceOf(Uint32Array);
    expect(Array.from(a.ids)).toEqual(codes('looked up packed'));
    expect(lookupEncoded('packed-test', codes, 'looked up packed').hit).toBe(true);
    const b = encodeCachedWith('packed-test', codes, 'looked up plain');
    expect(Array.isArray(b) && Object.isFrozen(b)).toBe(true);
    expect(b).toEqual(codes('looked up plain'));
  });

  it("one text encoded by two tokenizers keeps each one's ids (one entry, a slot each), looked up by a slice of a longer text", () => {
    const text = `shared by two tokenizers ${Math.random()}`;
    const prompt = `<|im_start|>tool\n${text}<|im_end|>`;
    const slice = prompt.slice(prompt.indexOf(text), prompt.indexOf(text) + text.length);
    expect(lookupEncoded('slot-a', () => [1, 2, 3], text, true).hit).toBe(false);
    expect(lookupEncoded('slot-b', () => [7], slice, true).hit).toBe(false);
    expect(Array.from(peekEncoded('slot-a', slice) ?? [])).toEqual([1, 2, 3]);
    expect(Array.from(peekEncoded('slot-b', text) ?? [])).toEqual([7]);
    expect(peekEncoded('slot-c', text)).toBeUndefined();
    // a new value for one tokenizer replaces its slot only
    storeEncoded('slot-a', text, [4, 5]);
    expect(Array.from(peekEncoded('slot-a', text) ?? [])).toEqual([4, 5]);
    expect(Array.from(peekEncoded('slot-b', text) ?? [])).toEqual([7]);
    expect(countCachedWith('slot-b', () => [9, 9], slice)).toBe(1);
  });

  it("a count stores its miss packed (the ledger's count of a new tool output), and reads it back without a copy", async () => {
    const a = countCachedWith('packed-test', codes, 'counted, not yet cached');
    expect(a).toBe(codes('counted, not yet cached').length);
    expect(peekEncoded('packed-test', 'counted, not yet cached')).toBeInstanceOf(Uint32Array);
    const tok = await loadTokenizer('qwen3');
    const out = '   1\tdef f(x):\n       return x + 1\n'.repeat(20) + 'counted by the ledger first';
    expect(tok.countTokens(out)).toBe(tok.encode(out).length);
    expect(peekEncoded(tok.name, out)).toBeInstanceOf(Uint32Array);
    // The tokens stage then frames those packed ids as the piece between <tool_response> and its end.
    expect(Array.from(tokenizeBySegments(tok, `\n${out}\n`).ids)).toEqual(tok.encode(`\n${out}\n`));
  });

  it("the tokens stage's ids from packed entries equal the whole text's encoding", async () => {
    const tok = await loadTokenizer('qwen3');
    const text = (i: number) =>
      `<|im_start|>system\nYou are agent ${i}.<|im_end|>\n<|im_start|>user\nfix bug ${i}\n\n<|im_end|>\n` +
      `<|im_start|>assistant\nreading ${'x'.repeat(i % 7)}<|im_end|>\n<|im_start|>user\n<tool_response>\n` +
      `${Array.from({ length: 40 }, (_, j) => `    line_${i}_${j} = compute(${j}) # ok`).join('\n')}\n</tool_response><|im_end|>\n<|im_start|>assistant\n`;
    for (let i = 0; i < 40; i++) {
      // Twice each: the second pass reads the packed entries the first one stored.
      for (let pass = 0; pass < 2; pass++) {
        const got = tokenizeBySegments(tok, text(i));
        expect(Array.from(got.ids)).toEqual(tok.encode(text(i)));
      }
    }
  });
});
