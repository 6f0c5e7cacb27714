// Model names the overhead bench's ctxgate serves (loadtest/overhead-proxies.ts).
/** The default pipeline: layout ctxgate, BENCH_TOKENIZER, policy ctxgate. */
export const BENCH_MODEL = 'bench-model';
/** layout passthrough, no tokenizer (a labelled extra). */
export const PASSTHROUGH_MODEL = 'bench-passthrough';
export const BENCH_TOKENIZER = 'qwen3';
