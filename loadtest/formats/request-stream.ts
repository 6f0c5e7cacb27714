// Request-stream JSONL (`*.jsonl`, `*.jsonl.gz`): one full chat body per line, optional `_meta`
// (session, turn, recorded_usage) stripped here. The format traffic capture writes. O(bytes).
import { readFile } from 'node:fs/promises';
import { gunzipSync } from 'node:zlib';
import type { ChatRequest } from '../../middleware/types.ts';
import { isObject, sessionIdFromPath, type RequestMeta, type Session, type SessionCall } from './types.ts';

export function parseRequestStream(text: string, source: string): Session {
  const calls: SessionCall[] = [];
  let id: string | undefined;
  const lines = text.split('\n');
  for (let n = 0; n < lines.length; n++) {
    const line = lines[n].trim();
    if (!line) continue;
    let obj: unknown;
    try {
      obj = JSON.parse(line);
    } catch (err) {
      throw new Error(`${source}:${n + 1}: not JSON (${(err as Error).message})`);
    }
    if (!isObject(obj) || !Array.isArray(obj.messages))
      throw new Error(`${source}:${n + 1}: not a chat body (no messages)`);
    const { _meta, ...rest } = obj;
    const meta = (isObject(_meta) ? _meta : {}) as RequestMeta;
    if (id === undefined && typeof meta.session === 'string') id = meta.session;
    const call: SessionCall = { body: rest as ChatRequest };
    const ru = meta.recorded_usage;
    if (isObject(ru) && typeof ru.prompt_tokens === 'number') {
      call.recordedUsage = {
        prompt_tokens: ru.prompt_tokens,
        cached_tokens: typeof ru.cached_tokens === 'number' ? ru.cached_tokens : 0,
        completion_tokens: typeof ru.completion_tokens === 'number' ? ru.completion_tokens : 0,
      };
    }
    calls.push(call);
  }
  return { id: id ?? sessionIdFromPath(source), source, calls };
}

export async function readRequestStream(path: string): Promise<Session> {
  const raw = await readFile(path);
  const text = path.endsWith('.gz') ? gunzipSync(raw).toString('utf8') : raw.toString('utf8');
  return parseRequestStream(text, path);
}

/** One line of the format: the body plus its `_meta`, as capture and exporters write it. */
export function formatRequestLine(body: ChatRequest, meta: RequestMeta): string {
  return JSON.stringify({ ...body, _meta: meta }) + '\n';
}
