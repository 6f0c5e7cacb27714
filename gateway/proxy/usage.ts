// The proxy reads usage with the one extractor (gateway/accounting/record/extract.ts): OpenAI/vLLM `usage`
// (+ prompt_tokens_details.cached_tokens), SGLang `meta_info`, Anthropic-style input/cache counts.
export { extractUsage } from '../accounting/record/extract.ts';
export type { ExtractedUsage as Usage } from '../accounting/record/extract.ts';
