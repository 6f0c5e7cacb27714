// One replayed call: POST the recorded body (model rewritten) to the gateway with undici and
// read back the worker-reported usage and modeled timing. No retries: an error is a result.
import { request, type Dispatcher } from 'undici';
import type { ChatRequest } from '../../middleware/types.ts';
import type { RecordedAnswer } from '../formats/recorded-answer.ts';
import type { CallRecord } from './types.ts';

export interface SendOptions {
  url: string;
  model: string;
  sessionHeader?: string;
  /** Report the worker's modeled ttft (x-sim-timing, relayed by the gateway) instead of the measured wall time. */
  modeledTtft: boolean;
  dispatcher?: Dispatcher;
  /** The recorded answer to this call, sent as the reference worker's `sim_output` extension. */
  answer?: RecordedAnswer;
}

let seq = 0;
const RUN_TAG = Math.floor(Math.random() * 36 ** 6).toString(36);

export function parseSimTiming(header: string | string[] | undefined): Record<string, number> {
  const out: Record<string, number> = {};
  const h = Array.isArray(header) ? header[0] : header;
  if (!h) return out;
  for (const part of h.split(';')) {
    const [k, v] = part.split('=');
    const n = Number(v);
    if (k && Number.isFinite(n)) out[k.trim()] = n;
  }
  return out;
}

interface UsageBody {
  usage?: {
    prompt_tokens?: number;
    completion_tokens?: number;
    prompt_tokens_details?: { cached_tokens?: number } | null;
  };
  error?: { message?: string };
}

export async function sendCall(body: ChatRequest, session: string, turn: number, o: SendOptions): Promise<CallRecord> {
  // The body goes out as recorded, model rewritten; a recorded stream is replayed non-streamed
  // (usage then arrives in the one JSON answer).
  const payload: ChatRequest & { sim_output?: RecordedAnswer } = { ...body, model: o.model };
  if (o.answer) payload.sim_output = o.answer;
  if (payload.stream) {
    payload.stream = false;
    delete payload.stream_options;
  }
  const requestId = `replay-${RUN_TAG}-${++seq}`;
  const headers: Record<string, string> = { 'content-type': 'application/json', 'x-request-id': requestId };
  if (o.sessionHeader) headers['x-session-id'] = o.sessionHeader === 'true' ? session : `${o.sessionHeader}${session}`;
  const started = performance.now();
  const rec: CallRecord = {
    session,
    turn,
    ok: false,
    status: 0,
    prompt_tokens: 0,
    cached_tokens: 0,
    completion_tokens: 0,
    request_id: requestId,
  };
  try {
    const res = await request(`${o.url.replace(/\/$/, '')}/v1/chat/completions`, {
      method: 'POST',
      headers,
      body: JSON.stringify(payload),
      dispatcher: o.dispatcher,
    });
    const headersAt = performance.now();
    rec.status = res.statusCode;
    const json = (await res.body.json().catch(() => ({}))) as UsageBody;
    const timing = parseSimTiming(res.headers['x-sim-timing']);
    const worker = res.headers['x-ctxgate-worker'];
    if (typeof worker === 'string') rec.worker = worker;
    if (res.statusCode >= 200 && res.statusCode < 300) {
      rec.ok = true;
      rec.prompt_tokens = json.usage?.prompt_tokens ?? 0;
      rec.cached_tokens = json.usage?.prompt_tokens_details?.cached_tokens ?? 0;
      rec.completion_tokens = json.usage?.completion_tokens ?? 0;
      // modeled and measured figures are never mixed: a missing header leaves ttft unset
      if (!o.modeledTtft) rec.ttft_ms = headersAt - started;
      else if (timing.ttft_ms !== undefined) rec.ttft_ms = timing.ttft_ms;
    } else {
      rec.error = `HTTP ${res.statusCode}: ${json.error?.message ?? 'no message'}`;
    }
  } catch (err) {
    rec.error = (err as Error).message;
  }
  return rec;
}
