// The compact vocabulary and merge tables (middleware/tokens/compact-vocab.ts, installed by
// compact-bpe-model.ts) must change no id and no decoded string: a compacted library tokenizer is
// compared with an untouched one of the same files on vocabulary tokens run through BPE (a sample),
// on generated text (adversarial Unicode: lone surrogates, marks, ZWJ emoji, CJK, added tokens
// inline, binary strings) and on agents' tool outputs, for each bundled BPE tokenizer; the
// replaced structures read back equal; a model whose map is not the array's inverse is left alone.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import { TokenizerLoader } from '@lenml/tokenizers';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { GrowingTraffic } from '../../loadtest/overhead/growing-sessions.ts';
import { compactBpeModel } from '../../middleware/tokens/compact-bpe-model.ts';
import { CompactRanks, CompactVocab } from '../../middleware/tokens/compact-vocab.ts';
import type { ChatMessage } from '../../middleware/types.ts';

const require = createRequire(import.meta.url);

interface Model {
  (tokens: string[]): string[];
  bpe: (token: string) => string[];
  tokens_to_ids: Map<string, number>;
  vocab: (string | undefined)[];
  merges: [string, string][];
  bpe_ranks: Map<string, number>;
  config: Record<string, unknown>;
  convert_ids_to_tokens: (ids: unknown[]) => unknown[];
}
interface Tok {
  model: Model;
  encode: (t: string, o: { add_special_tokens: boolean }) => number[];
  decode: (ids: number[], o: Record<string, boolean>) => string;
}

function load(spec: string): { tok: Tok; added: string[] } {
  const dir = resolve(require.resolve(`@lenml/tokenizer-${spec}/models/tokenizer.json`), '..');
  const json = (f: string) => JSON.parse(readFileSync(resolve(dir, f), 'utf8')) as Record<string, unknown>;
  const tj = json('tokenizer.json');
  const tok = TokenizerLoader.fromPreTrained({
    tokenizerJSON: tj as never,
    tokenizerConfig: json('tokenizer_config.json') as never,
  }) as unknown as Tok;
  const added = ((tj.added_tokens as { content: string }[] | undefined) ?? []).map((t) => t.content);
  return { tok, added };
}

const piece = (added: string[]) =>
  fc.oneof(
    fc.constantFrom(' ', '    ', '\n\n', '\r\n', '\t', "'s", 'é', 'e\u0301', '한국어', '中文字符', '🙂', '👩‍💻'),
    fc.constantFrom('\u00a0', '\u200b', '\ud800', '\udfff', 'a\ud83d', '\u202e', '\ufeff', '𝔘𝔫𝔦', 'ﬁ', 'İ'),
    fc.constantFrom(...added.slice(0, 30)),
    fc.string({ maxLength: 10 }),
    fc.string({ unit: 'grapheme', maxLength: 8 }),
    fc.string({ unit: 'binary', maxLength: 6 }),
    fc.string({ unit: 'binary-ascii', maxLength: 12 }),
  );
const text = (added: string[]) => fc.array(piece(added), { maxLength: 16 }).map((xs) => xs.join(''));

function toolOutputs(n: number): string[] {
  const traffic = new GrowingTraffic({ slots: 6, model: 'm', calls: 12 });
  const out: string[] = [];
  while (out.length < n) {
    const body = JSON.parse(traffic.next()) as { messages: ChatMessage[] };
    const last = body.messages[body.messages.length - 1];
    out.push(typeof last.content === 'string' ? last.content : '');
  }
  return out;
}

const DECODE = { skip_special_tokens: false, clean_up_tokenization_spaces: false };

describe('compact BPE vocabulary and merges', () => {
  // One token in `stride` through BPE (~50 µs per token and side on a loaded machine; every token
  // of all three was compared once outside the suite, see the commit).
  for (const [spec, stride] of [
    ['qwen3', 4],
    ['llama3_1', 12],
    ['deepseek_v3', 12],
  ] as const) {
    it(`${spec}: same BPE of vocabulary tokens, same ids and decodes of generated text and tool outputs`, () => {
      const plain = load(spec);
      const small = load(spec);
      // The structures as loaded, kept for comparison after the swap.
      const before = {
        entries: [...small.tok.model.tokens_to_ids],
        vocab: small.tok.model.vocab.slice(),
        merges: small.tok.model.merges.map((m) => [...m]),
        ranks: [...small.tok.model.bpe_ranks],
      };
      expect(compactBpeModel(small.tok.model)).toBe('compacted');
      const a = plain.tok.model;
      const b = small.tok.model;

      // Every token string through the merges (each is some merge's result): the BPE cache is
      // bypassed by a fresh call per token on both sides (distinct strings, cache capacity 10k).
      let bpes = 0;
      for (let i = 0; i < before.vocab.length; i += stride) {
        const t = before.vocab[i];
        if (t === undefined) continue;
        const want = a.bpe(t);
        const got = b.bpe(t);
        // One expect per token is most of the test's time: compare, then report the first.
        if (got.length !== want.length || got.some((x, j) => x !== want[j])) expect(got, t).toEqual(want);
        bpes++;
      }
      expect(bpes).toBeGreaterThan(10_000);

      const samples = fc.sample(text(plain.added), { numRuns: 1000, seed: 29 });
      const all = [...samples, ...toolOutputs(40)];
      let tokens = 0;
      for (const t of all) {
        const want = plain.tok.encode(t, { add_special_tokens: false });
        expect(small.tok.encode(t, { add_special_tokens: false }), JSON.stringify(t.slice(0, 80))).toEqual(want);
        if (want.length > 0) expect(small.tok.decode(want, DECODE)).toBe(plain.tok.decode(want, DECODE));
        tokens += want.length;
      }
      expect(tokens).toBeGreaterThan(30_000);

      // Odd ids decode as before (the array's holes, out of range, non-integers, strings).
      const odd: unknown[] = [-1, 1.5, Number.NaN, before.vocab.length, before.vocab.length + 5, '7', 0];
      expect(b.convert_ids_to_tokens(odd)).toEqual(a.convert_ids_to_tokens(odd));

      // The replaced structures read back equal (lazily rebuilt) and the map in its order
      // (plain loops: a deep toEqual of 151k entries is most of a minute here).
      const entries = [...b.tokens_to_ids];
      expect(entries.length).toBe(before.entries.length);
      expect(b.tokens_to_ids.size).toBe(before.entries.length);
      expect(entries.findIndex(([k, v], i) => k !== before.entries[i][0] || v !== before.entries[i][1])).toBe(-1);
      expect(b.vocab.length).toBe(before.vocab.length);
      expect(before.vocab.findIndex((t, i) => b.vocab[i] !== t || i in b.vocab !== i in before.vocab)).toBe(-1);
      expect(b.merges.length).toBe(before.merges.length);
      expect(before.merges.findIndex(([x, y], i) => b.merges[i][0] !== x || b.merges[i][1] !== y)).toBe(-1);
      const ranks = [...b.bpe_ranks];
      expect(ranks.length).toBe(before.ranks.length);
      expect(ranks.findIndex(([k, v], i) => k !== before.ranks[i][0] || v !== before.ranks[i][1])).toBe(-1);
      expect(() => b.config.vocab).toThrow(/released/);
      expect(() => b.tokens_to_ids.set('x', 1)).toThrow(/read-only/);
    }, 180_000);
  }

  it('a model whose tables are not what the library built is left alone', () => {
    const { tok } = load('qwen3');
    const m = tok.model;
    const id = m.tokens_to_ids.get('Ġthe') as number;
    m.tokens_to_ids.set('Ġthe', id + 1);
    expect(compactBpeModel(m)).toBe('differs');
    expect(m.tokens_to_ids).toBeInstanceOf(Map);
    // A merge's rank changed, and a key no merge has.
    const other = load('qwen3').tok.model;
    other.bpe_ranks.set(JSON.stringify(other.merges[10]), 3);
    expect(compactBpeModel(other)).toBe('differs');
    const third = load('qwen3').tok.model;
    third.bpe_ranks.set('["\\u0000z","q"]', 3);
    expect(compactBpeModel(third)).toBe('differs');
    expect(compactBpeModel({})).toBe('not-bpe');
  });

  it('CompactVocab and CompactRanks: lookups, holes, repeated strings and pairs', () => {
    const v = new CompactVocab(['a', undefined, 'ab', '', 'b\ud800']);
    expect([v.id('a'), v.id('ab'), v.id(''), v.id('b\ud800'), v.id('b'), v.id('abc')]).toEqual([
      0,
      2,
      3,
      4,
      undefined,
      undefined,
    ]);
    expect([v.token(0), v.token(1), v.token(2), v.token(3), v.token(5), v.token(-1), v.token(0.5)]).toEqual([
      'a',
      undefined,
      'ab',
      '',
      undefined,
      undefined,
      undefined,
    ]);
    expect(v.size).toBe(4);
    expect(() => new CompactVocab(['x', 'y', 'x'])).toThrow(/share/);
    const r = new CompactRanks(Int32Array.from([0, 1, 1, 0, 0, 1, 2, 2]));
    expect([r.get(0, 1), r.get(1, 0), r.get(2, 2), r.get(2, 1)]).toEqual([2, 1, 3, undefined]);
    expect(r.size).toBe(3);
  });
});
