// Bodies of SGLang's native `/generate`. Non-stream: `{text, meta_info}`. Stream
// (`"stream": true`): one `data: {text, meta_info}` event per decode step, where `text` is
// the whole output so far (SGLang's default, not a delta) and `meta_info` carries the
// running `completion_tokens` and a `finish_reason` that stays null until the last event;
// the stream ends with `data: [DONE]` (sglang http_server.generate_request).
import type { Prepared } from './engine.ts';

export interface GenerateMeta {
  id: string;
  finish_reason: { type: 'length'; length: number } | { type: 'stop'; matched: number } | null;
  prompt_tokens: number;
  completion_tokens: number;
  cached_tokens: number;
  e2e_latency: number;
}

export function finishReason(p: Prepared, eosId: number): NonNullable<GenerateMeta['finish_reason']> {
  return p.finishReason === 'length'
    ? { type: 'length', length: p.outputIds.length }
    : { type: 'stop', matched: eosId };
}

export function generateMeta(
  id: string,
  p: Prepared,
  cached: number,
  completion: number,
  finish: GenerateMeta['finish_reason'],
  t0: number,
): GenerateMeta {
  return {
    id,
    finish_reason: finish,
    prompt_tokens: p.promptIds.length,
    completion_tokens: completion,
    cached_tokens: cached,
    e2e_latency: (performance.now() - t0) / 1000,
  };
}

/**
 * Stream events for one answer: a cumulative-text event per delta, then a final event with
 * the full completion count and finish reason. `tokens` drives the worker's decode pacing.
 * e2e_latency is filled when the event is built, so it reads the time of the build, not
 * of the write; the last event is what clients read it from.
 */
export function generateEvents(
  id: string,
  p: Prepared,
  cached: number,
  deltas: string[],
  eosId: number,
  t0: number,
): { data: unknown; tokens: number }[] {
  const events: { data: unknown; tokens: number }[] = [];
  let text = '';
  // A delta may cover more than one id (textDeltas merges undecodable bytes); spread the
  // count so the running completion_tokens ends at the real total on the last delta.
  const total = p.outputIds.length;
  deltas.forEach((d, i) => {
    text += d;
    const done = Math.round(((i + 1) * total) / deltas.length);
    events.push({ data: { text, meta_info: generateMeta(id, p, cached, done, null, t0) }, tokens: 1 });
  });
  events.push({
    data: { text: p.content ?? '', meta_info: generateMeta(id, p, cached, total, finishReason(p, eosId), t0) },
    tokens: 0,
  });
  return events;
}
