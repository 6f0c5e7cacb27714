// Tokenizer + chat template for the reference worker, over the shared registry
// (middleware/tokens/registry.ts: the model's HF template rendered with @huggingface/jinja as
// vLLM/SGLang render it). Prompts are encoded as one sequence; the speed-up: the rendered
// prompt is cut at added (special) tokens — which HF tokenizers split out before any
// normalisation or pre-tokenisation, so no merge ever spans them — and each piece's ids are
// memoised by its text. Agent prompts repeat all earlier turns on every call, so after the
// first call only the newest pieces are encoded. Identity with whole-prompt encoding is
// checked for every bundled tokenizer in test/loadtest/sim-worker-tokenize.test.ts.
import { LRUCache } from 'lru-cache';
import { loadTokenizer } from '../../middleware/tokens/registry.ts';
import type { ChatMessage as SharedChatMessage, ToolDef } from '../../middleware/types.ts';

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
  /** Prepended to text prompts when the tokenizer has a BOS (completions, /tokenize). */
  readonly bosId?: number;
  readonly templateSource: string;
}

const SEGMENT_CACHE_CHARS = 64 * 1024 * 1024;
export const TOKENIZER_SPECS = ['qwen3', 'llama3_1', 'deepseek_v3', 'o200k_base', 'cl100k_base'];

function escapeRe(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

export async function loadWorkerTokenizer(spec: string, chatTemplateFile?: string): Promise<WorkerTokenizer> {
  const h = await loadTokenizer(spec, { chatTemplateFile });
  const encode = (t: string): number[] => [...h.encode(t)];
  const specials = [...new Set(h.specialTokens)].filter((s) => s.length > 0).sort((a, b) => b.length - a.length);
  const splitter = specials.length ? new RegExp(`(${specials.map(escapeRe).join('|')})`, 'u') : undefined;
  const specialIds = new Map<string, number[]>();
  for (const s of specials) specialIds.set(s, encode(s));
  const pieces = new LRUCache<string, number[]>({
    maxSize: SEGMENT_CACHE_CHARS,
    sizeCalculation: (_v, k) => Math.max(1, k.length),
  });

  const encodeCached = (text: string): number[] => {
    if (!splitter) return encode(text);
    const out: number[] = [];
    const parts = text.split(splitter);
    for (let i = 0; i < parts.length; i++) {
      const p = parts[i];
      if (!p) continue;
      let ids = i % 2 === 1 ? specialIds.get(p) : pieces.get(p);
      if (!ids) {
        ids = encode(p);
        pieces.set(p, ids);
      }
      for (const id of ids) out.push(id);
    }
    return out;
  };
  const single = (tok: string | undefined): number | undefined => {
    if (!tok) return undefined;
    const ids = encode(tok);
    return ids.length === 1 ? ids[0] : undefined;
  };

  return {
    spec,
    encode,
    encodeCached,
    decode: (ids) => (ids.length ? h.decode(Array.from(ids)) : ''),
    renderChat: (messages, opts = {}) =>
      h.renderChat(messages as unknown as SharedChatMessage[], {
        tools: opts.tools?.length ? (opts.tools as ToolDef[]) : undefined,
        addGenerationPrompt: opts.addGenerationPrompt ?? true,
      }),
    eosId: single(h.eosToken) ?? 0,
    bosId: single(h.bosToken),
    templateSource: h.templateSource,
  };
}
