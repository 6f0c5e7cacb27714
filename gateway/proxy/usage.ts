// Token usage as workers report it: OpenAI/vLLM `usage` (+ prompt_tokens_details.cached_tokens)
// and SGLang's `meta_info.cached_tokens` where present.

export interface Usage {
  promptTokens: number;
  completionTokens: number;
  cachedTokens: number;
}

function num(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}

/** Reads usage from a non-stream body or a stream chunk; undefined when it carries none. */
export function extractUsage(obj: unknown): Usage | undefined {
  if (!obj || typeof obj !== 'object') return undefined;
  const o = obj as { usage?: unknown; meta_info?: { cached_tokens?: unknown } };
  const u = o.usage as
    | { prompt_tokens?: unknown; completion_tokens?: unknown; prompt_tokens_details?: { cached_tokens?: unknown } | null; meta_info?: { cached_tokens?: unknown } }
    | null
    | undefined;
  if (!u || typeof u !== 'object') return undefined;
  const cached = num(u.prompt_tokens_details?.cached_tokens) ?? num(o.meta_info?.cached_tokens) ?? num(u.meta_info?.cached_tokens) ?? 0;
  return {
    promptTokens: num(u.prompt_tokens) ?? 0,
    completionTokens: num(u.completion_tokens) ?? 0,
    cachedTokens: cached,
  };
}
