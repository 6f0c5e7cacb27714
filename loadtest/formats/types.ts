// Shapes every input format parses to: one Session per recorded file, one call per model request
// the agent made, in order, with the provider's usage when the recording kept it.
import type { ChatRequest } from '../../middleware/types.ts';

export interface RecordedUsage {
  prompt_tokens: number;
  cached_tokens: number;
  completion_tokens: number;
}

export interface SessionCall {
  body: ChatRequest;
  recordedUsage?: RecordedUsage;
}

export interface Session {
  id: string;
  /** File the session came from (or `synth:<seed>` for generated ones). */
  source: string;
  calls: SessionCall[];
}

/** The `_meta` object a request-stream line may carry (stripped before sending). */
export interface RequestMeta {
  session?: string;
  turn?: number;
  recorded_usage?: RecordedUsage;
  [k: string]: unknown;
}

export type JsonObject = Record<string, unknown>;

export function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Reads OpenAI/DeepSeek usage blocks into the three numbers replay reports. */
export function usageFrom(u: unknown): RecordedUsage | undefined {
  if (!isObject(u) || typeof u.prompt_tokens !== 'number') return undefined;
  const details = isObject(u.prompt_tokens_details) ? u.prompt_tokens_details : {};
  const cached =
    typeof details.cached_tokens === 'number'
      ? details.cached_tokens
      : typeof u.prompt_cache_hit_tokens === 'number'
        ? u.prompt_cache_hit_tokens
        : typeof u.cached_tokens === 'number'
          ? u.cached_tokens
          : 0;
  return {
    prompt_tokens: u.prompt_tokens,
    cached_tokens: cached,
    completion_tokens: typeof u.completion_tokens === 'number' ? u.completion_tokens : 0,
  };
}

/** File name without directory and without the recognised trajectory extension. */
export function sessionIdFromPath(path: string): string {
  const base = path.split(/[\\/]/).pop() ?? path;
  return base.replace(
    /(\.jsonl\.gz|\.jsonl|\.traj\.json\.gz|\.traj\.json|\.traj|\.aider\.llm\.history|\.llm\.history)$/,
    '',
  );
}
