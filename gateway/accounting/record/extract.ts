// Reads token usage from the shapes upstreams send, into one normalized triple.
//  - OpenAI / vLLM: `usage: {prompt_tokens, completion_tokens, prompt_tokens_details: {cached_tokens}}`
//    (non-stream body, or the final stream chunk with `stream_options.include_usage`).
//  - SGLang: the same `usage`, or native `meta_info: {prompt_tokens, completion_tokens, cached_tokens}`.
//  - Anthropic-style `input_tokens` + `cache_read_input_tokens` (+ `cache_creation_input_tokens`),
//    where cache reads are NOT part of input_tokens: they are added to form the prompt total.
// The invariant every shape is normalized to: cachedTokens ⊆ promptTokens (0 ≤ cached ≤ prompt).

export interface ExtractedUsage {
  promptTokens: number;
  cachedTokens: number;
  outputTokens: number;
  cacheWriteTokens?: number;
}

function num(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) && v >= 0 ? Math.floor(v) : undefined;
}

function obj(v: unknown): Record<string, unknown> | undefined {
  return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
}

function clamp(prompt: number, cached: number, output: number, write?: number): ExtractedUsage {
  const c = Math.min(cached, prompt);
  const u: ExtractedUsage = { promptTokens: prompt, cachedTokens: c, outputTokens: output };
  if (write !== undefined && write > 0) u.cacheWriteTokens = Math.min(write, prompt - c);
  return u;
}

/** Usage from one `usage` object; undefined when it carries no prompt count. */
export function fromUsageObject(usage: unknown): ExtractedUsage | undefined {
  const u = obj(usage);
  if (!u) return undefined;
  const prompt = num(u.prompt_tokens);
  if (prompt !== undefined) {
    const details = obj(u.prompt_tokens_details);
    // Some SGLang builds put cached_tokens at the top of `usage` instead of in details.
    const cached = num(details?.cached_tokens) ?? num(u.cached_tokens) ?? 0;
    return clamp(prompt, cached, num(u.completion_tokens) ?? 0);
  }
  const input = num(u.input_tokens);
  if (input !== undefined) {
    const read = num(u.cache_read_input_tokens) ?? 0;
    const write = num(u.cache_creation_input_tokens) ?? 0;
    return clamp(input + read + write, read, num(u.output_tokens) ?? 0, write);
  }
  return undefined;
}

/** Usage from a response body or a stream chunk (vLLM/OpenAI `usage` or SGLang `meta_info`). */
export function extractUsage(payload: unknown): ExtractedUsage | undefined {
  const p = obj(payload);
  if (!p) return undefined;
  const fromUsage = fromUsageObject(p.usage);
  const meta = obj(p.meta_info);
  if (fromUsage) {
    // SGLang builds that report cached tokens only in meta_info (top level or inside usage).
    const metaCached = num(meta?.cached_tokens) ?? num(obj(obj(p.usage)?.meta_info)?.cached_tokens);
    if (fromUsage.cachedTokens === 0 && metaCached)
      return clamp(fromUsage.promptTokens, metaCached, fromUsage.outputTokens, fromUsage.cacheWriteTokens);
    return fromUsage;
  }
  const prompt = num(meta?.prompt_tokens);
  if (meta && prompt !== undefined)
    return clamp(prompt, num(meta.cached_tokens) ?? 0, num(meta.completion_tokens) ?? 0);
  return undefined;
}

/**
 * Reference-worker timing header `x-sim-timing`: JSON (`{"prefill_ms":12.5,"decode_ms":80}`) or
 * `prefill_ms=12.5;decode_ms=80` (`,` also accepted). Unparseable values are ignored.
 */
export function parseSimTiming(header: string | undefined): { prefillMs?: number; decodeMs?: number } {
  if (!header) return {};
  let fields: Record<string, unknown> = {};
  const t = header.trim();
  if (t.startsWith('{')) {
    try {
      fields = obj(JSON.parse(t)) ?? {};
    } catch {
      return {};
    }
  } else {
    for (const part of t.split(/[;,]/)) {
      const [k, v] = part.split('=');
      if (k && v !== undefined) fields[k.trim()] = Number(v.trim());
    }
  }
  const out: { prefillMs?: number; decodeMs?: number } = {};
  const pre = fields.prefill_ms;
  const dec = fields.decode_ms;
  if (typeof pre === 'number' && Number.isFinite(pre) && pre >= 0) out.prefillMs = pre;
  if (typeof dec === 'number' && Number.isFinite(dec) && dec >= 0) out.decodeMs = dec;
  return out;
}
