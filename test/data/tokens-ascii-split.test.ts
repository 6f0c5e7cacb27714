// Data tier: the ASCII piece scan (middleware/tokens/ascii-split.ts) agrees with the library's
// Split pattern at every piece of every distinct message text of every recorded run in
// $CTXGATE_TRAJECTORIES (tool outputs, commands, thoughts, file bodies of real agents), and the
// fast encode built on it gives the library's ids for each of those texts, Qwen 3 and Llama 3.
import { describe, expect, it } from 'vitest';
import { readSessions } from '../../loadtest/formats/read-sessions.ts';
import {
  ASK_REGEX,
  asciiPieceEnd,
  LLAMA3_SPLIT_SOURCE,
  QWEN_SPLIT_SOURCE,
} from '../../middleware/tokens/ascii-split.ts';
import { fastBpeEncoder } from '../../middleware/tokens/fast-bpe.ts';
import { bundledLibraryTokenizer } from '../../middleware/tokens/library-tokenizer.ts';
import { dataTrajectories } from '../fixtures/trajectories.ts';

async function messageTexts(): Promise<string[]> {
  const texts = new Set<string>();
  for (const s of await readSessions([dataTrajectories()]))
    for (const c of s.calls)
      for (const m of c.body.messages) texts.add(typeof m.content === 'string' ? m.content : JSON.stringify(m.content));
  return [...texts];
}

describe('ASCII piece scan on all the recorded data', () => {
  for (const [spec, source, digits] of [
    ['qwen3', QWEN_SPLIT_SOURCE, 1],
    ['llama3_1', LLAMA3_SPLIT_SOURCE, 3],
  ] as const) {
    it(`${spec}: the regex's pieces and the library's ids on every distinct message text`, async () => {
      const texts = await messageTexts();
      expect(texts.length).toBeGreaterThan(1000);
      const re = new RegExp(source, 'uy');
      let pieces = 0;
      let answered = 0;
      for (const x of texts)
        for (let at = 0; at < x.length; pieces++) {
          re.lastIndex = at;
          expect(re.test(x)).toBe(true);
          const got = asciiPieceEnd(x, at, digits);
          if (got !== ASK_REGEX) {
            answered++;
            if (got !== re.lastIndex)
              expect.fail(`${spec}: text of ${x.length} chars at ${at}: ${got} ≠ ${re.lastIndex}`);
          }
          at = re.lastIndex;
        }
      // the recorded runs are mostly ASCII: the scan, not the regex, answers nearly every piece
      expect(answered / pieces).toBeGreaterThan(0.95);
      const lib = bundledLibraryTokenizer(spec);
      const fast = fastBpeEncoder(lib.tok)!;
      let differ = 0;
      for (const x of texts) {
        const want = lib.encode(x);
        const got = fast(x);
        if (got.length !== want.length || got.some((id, i) => id !== want[i])) differ++;
      }
      expect(differ).toBe(0);
    });
  }
});
