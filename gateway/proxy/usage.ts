// The proxy reads usage with the one extractor (gateway/usage/extract.ts): OpenAI/vLLM `usage`
// (+ prompt_tokens_details.cached_tokens), SGLang `meta_info`, Anthropic-style input/cache counts.
export { extractUsage } from '../usage/extract.ts';
export type { ExtractedUsage as Usage } from '../usage/extract.ts';
