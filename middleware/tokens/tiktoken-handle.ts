// Tokenizer handle over OpenAI's BPE encodings (js-tiktoken) with a ChatML template
// (configs/templates/chatml.jinja). tiktoken has no <|im_start|>/<|im_end|>, so they are added as
// extended special tokens with ids just past the vocabulary's highest id, the way OpenAI's own
// cl100k "im" variant does (100264/100265); o200k gets 200264/200265 by the same rule. Special
// strings found in the text are encoded as specials (allowedSpecial = 'all'), like HF tokenizers.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { getEncoding, type TiktokenEncoding } from 'js-tiktoken';
import { ChatRenderer, type TokenizerHandle } from './handle.ts';
import { countCachedWith, encodeCachedWith } from './encode-cache.ts';
import { encodeBounded } from './long-runs.ts';

export const CHATML_TEMPLATE_FILE = fileURLToPath(new URL('../../configs/templates/chatml.jinja', import.meta.url));

const CHATML_IDS: Record<string, Record<string, number>> = {
  cl100k_base: { '<|im_start|>': 100264, '<|im_end|>': 100265 },
  o200k_base: { '<|im_start|>': 200264, '<|im_end|>': 200265 },
};
const BASE_SPECIALS: Record<string, string[]> = {
  cl100k_base: ['<|endoftext|>', '<|fim_prefix|>', '<|fim_middle|>', '<|fim_suffix|>', '<|endofprompt|>'],
  o200k_base: ['<|endoftext|>', '<|endofprompt|>'],
};

export function createTiktokenHandle(
  encodingName: 'o200k_base' | 'cl100k_base',
  chatTemplateFile?: string,
): TokenizerHandle {
  const extra = CHATML_IDS[encodingName];
  const enc = getEncoding(encodingName as TiktokenEncoding, extra);
  const source = readFileSync(chatTemplateFile ?? CHATML_TEMPLATE_FILE, 'utf8');
  const eos = '<|im_end|>';
  const renderer = new ChatRenderer(source, undefined, eos);
  // Long letter/punctuation runs are encoded in pieces so BPE stays linear (long-runs.ts).
  const encode = (text: string): number[] =>
    text.length === 0 ? [] : encodeBounded(text, (t) => enc.encode(t, 'all'));
  return {
    name: encodingName,
    encode,
    decode: (ids) => enc.decode(ids as number[]),
    renderChat: (messages, opts) => renderer.render(messages, opts),
    specialTokens: Object.freeze([...Object.keys(extra), ...BASE_SPECIALS[encodingName]]),
    eosToken: eos,
    templateSource: source,
    countTokens: (text) => countCachedWith(encodingName, encode, text),
    encodeCached: (text) => encodeCachedWith(encodingName, encode, text),
  };
}
