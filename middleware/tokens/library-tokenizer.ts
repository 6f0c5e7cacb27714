// The @lenml/tokenizers tokenizer of a bundled model, built as hf-handle.ts builds it (ByteLevel
// memoised, model not compacted), for benchmarks and tests that compare the fast encode with the
// library's. Parses the bundled JSON (~0.3 s for a 150k vocabulary).
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import { TokenizerLoader } from '@lenml/tokenizers';
import { memoiseByteLevel } from './byte-level-memo.ts';

const require = createRequire(import.meta.url);

export interface LibraryTokenizer {
  /** The library's object (what fastBpeEncoder and compactBpeModel read). */
  tok: unknown;
  /** The library's encode: tok.encode(text, { add_special_tokens: false }). */
  encode: (text: string) => number[];
  /** The added tokens' strings, in tokenizer.json's order. */
  added: string[];
}

/** A bundled model's (`qwen3`, `llama3_1`, `deepseek_v3`) library tokenizer. */
export function bundledLibraryTokenizer(spec: string): LibraryTokenizer {
  const dir = resolve(require.resolve(`@lenml/tokenizer-${spec}/models/tokenizer.json`), '..');
  const json = (f: string) => JSON.parse(readFileSync(resolve(dir, f), 'utf8')) as Record<string, unknown>;
  const tokenizerJSON = json('tokenizer.json');
  const tok = TokenizerLoader.fromPreTrained({
    tokenizerJSON: tokenizerJSON as Parameters<typeof TokenizerLoader.fromPreTrained>[0]['tokenizerJSON'],
    tokenizerConfig: json('tokenizer_config.json') as Parameters<
      typeof TokenizerLoader.fromPreTrained
    >[0]['tokenizerConfig'],
  });
  memoiseByteLevel((tok as unknown as { pre_tokenizer?: unknown }).pre_tokenizer);
  const added = ((tokenizerJSON.added_tokens as { content: string }[] | undefined) ?? []).map((t) => t.content);
  return { tok, encode: (t) => tok.encode(t, { add_special_tokens: false }), added };
}
