// One record per finished request: what the ledger stores and the report aggregates.
export interface UsageEvent {
  /** Epoch ms when the request arrived. */
  time: number;
  requestId: string;
  tenant: string;
  keyId: string;
  sessionId: string;
  model: string;
  /** Ingress API (openai-chat, openai-completions, anthropic-messages, openai-responses). */
  api?: string;
  /** Worker id that answered ('' when none was reached). */
  worker: string;
  status: number;
  stream: boolean;
  /** Worker-reported prompt tokens, or the gateway's own count when usageReported is false. */
  promptTokens: number;
  /** Worker-reported cached prompt tokens: a SUBSET of promptTokens, never added on top. */
  cachedTokens: number;
  /** The router's / pipeline's prediction of the cached prefix (tokens). */
  predictedCachedTokens?: number;
  outputTokens: number;
  /** False when the upstream sent no usage block (token fields are then 0 or estimates). */
  usageReported: boolean;
  ttftMs?: number;
  totalMs: number;
  /** totalMs minus time spent waiting on upstream. */
  gatewayOverheadMs: number;
  attempts: number;
  errorCode?: string;
  breakCause?: string;
  /** Tokens the agent's original (unrewritten) layout would have had cached, from diagnostics. */
  counterfactualPromptTokensCached?: number;
  /** Cached tokens expected on a uniformly chosen healthy worker, from the policy's index. */
  uniformCachedTokens?: number;
  /** Prefill / decode time the engine reported (reference worker: `x-sim-timing`) or modelled. */
  prefillMs?: number;
  decodeMs?: number;
  /** Where prefillMs / decodeMs come from. */
  timingSource?: 'reported' | 'modelled';
  /** Uncached prompt tokens written to a provider cache at the cache-write price. */
  cacheWriteTokens?: number;
}
