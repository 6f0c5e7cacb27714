// A prompt piece missing from the id cache is assembled from its framing and its content's ids
// (cached before, or encoded and cached on the miss): the ids must equal whole-text encoding for any
// content, whatever it ends or starts with (punctuation merging with the frame's newline, runs of
// newlines, spaces, multi-byte characters cut by a token), under every bundled tokenizer kind.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { loadTokenizer } from '../../middleware/tokens/registry.ts';
import { tokenizeBySegments } from '../../middleware/tokens/segment-tokens.ts';
import type { ChatMessage } from '../../middleware/types.ts';
import { callsRun, noteLongEncodes, toolTurn } from '../helpers/segment-tokens-rig.ts';

const EDGES = [')\n', '\n\n', '\n', ' ', '  \n', '}', 'é', '日本語', '🙂', '\t', '"\n', '.\n\n\n', '\r\n', '<', ''];
const BODY = [
  '   1\tdef f(x):\n',
  'return x + 1',
  '日本語のテキスト ',
  'naïve café ',
  '🙂 emoji line\n',
  '{"a": [1, 2]}\n',
  '\t\tindent\n',
  'x'.repeat(70),
  ' spaced   out \n',
];

function content(parts: number[], start: number, end: number): string {
  return EDGES[start] + parts.map((i) => BODY[i % BODY.length]).join('') + 'y'.repeat(64) + EDGES[end];
}

/** A content's body parts, its first and last edge, and the role whose message carries it. */
const CONTENT_IN_ROLE = [
  fc.array(fc.nat(BODY.length * 3), { minLength: 1, maxLength: 6 }),
  fc.nat(EDGES.length - 1),
  fc.nat(EDGES.length - 1),
  fc.constantFrom('tool', 'user', 'assistant'),
] as const;

describe('segment tokens: framed content from cached ids', () => {
  for (const tokenizer of ['qwen3', 'llama3_1', 'deepseek_v3', 'cl100k_base']) {
    it(`${tokenizer}: equals whole-text encoding when the contents were cached first`, async () => {
      const tok = await loadTokenizer(tokenizer);
      fc.assert(
        fc.property(...CONTENT_IN_ROLE, (parts, s, e, role) => {
          const c = content(parts, s, e);
          tok.countTokens(c); // as the ledger's count does before the tokens stage runs (a packed entry)
          const msgs: ChatMessage[] = [
            { role: 'system', content: 'You are a coding agent.' },
            { role: 'user', content: 'task' },
            callsRun('{"cmd":"ls"}'),
            role === 'tool'
              ? { role: 'tool', tool_call_id: 'c1', content: c }
              : { role: 'tool', tool_call_id: 'c1', content: 'ok' },
            ...(role === 'tool' ? [] : [{ role, content: c } as ChatMessage]),
          ];
          const text = tok.renderChat(msgs, {});
          expect(Array.from(tokenizeBySegments(tok, text).ids)).toEqual(tok.encode(text));
        }),
        { numRuns: 60, seed: 17 },
      );
    });
  }
});

describe('segment tokens: content tails decoded once per id run', () => {
  it('framed pieces whose contents end alike but not the same take the framed path, never a whole encode', async () => {
    const base = await loadTokenizer('qwen3');
    // Counts the long encodes a framed miss would do.
    const enc = noteLongEncodes(base, false);
    const { tok, long } = enc;
    const words = ['alpha', 'beta', 'gamma', 'delta'];
    for (let i = 0; i < 24; i++) {
      // The last three tokens differ only in their first one across contents: a memo keyed on
      // fewer ids than it decodes hands back another content's tail.
      const c = `${'   1\tline of output '.repeat(8)} case ${i}\n${words[i % 4]} end here`;
      // Cached as the ledger's count caches it (a plain array), or packed as the tokens stage stores
      // a piece (a Uint32Array): both kinds of cached content.
      if (i % 2 === 0) base.encodeCached(c);
      else tokenizeBySegments(tok, c);
      const text = base.renderChat(toolTurn(c), {});
      enc.on = true;
      const ids = Array.from(tokenizeBySegments(tok, text).ids);
      enc.on = false;
      expect(ids).toEqual(base.encode(text));
    }
    expect(long).toEqual([]);
  });
});

describe('segment tokens: a fresh content encoded once', () => {
  for (const tokenizer of ['qwen3', 'llama3_1', 'deepseek_v3', 'cl100k_base']) {
    it(`${tokenizer}: equals whole-text encoding with nothing cached first`, async () => {
      const tok = await loadTokenizer(tokenizer);
      fc.assert(
        fc.property(...CONTENT_IN_ROLE, fc.nat(1e9), (parts, s, e, role, salt) => {
          // (a salt: a content no earlier run cached)
          const c = `${content(parts, s, e)}${salt}`;
          const msgs: ChatMessage[] = [
            { role: 'system', content: 'You are a coding agent.' },
            { role: 'user', content: 'task' },
            { role: role === 'tool' ? 'user' : role, content: c } as ChatMessage,
          ];
          if (role === 'tool') {
            msgs[2] = callsRun('{"cmd":"ls"}');
            msgs.push({ role: 'tool', tool_call_id: 'c1', content: c });
          }
          const text = tok.renderChat(msgs, {});
          expect(Array.from(tokenizeBySegments(tok, text).ids)).toEqual(tok.encode(text));
        }),
        { numRuns: 60, seed: 29 },
      );
    });
  }
});
