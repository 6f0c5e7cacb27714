// mini-swe-agent `*.traj.json`: the request for assistant message i is every message before it
// with `extra` removed, `tools: [bash_tool.json]` (the file next to the trajectory), the model from
// info.config.model.model_name; usage recorded on messages[i].extra.response.usage. The closing
// `role: "exit"` message was never sent. A `.traj.json.gz` is read the same after gunzip (the test fixtures). O(calls × history) objects, shared message copies.
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import type { ChatMessage, ChatRequest, ToolDef } from '../../middleware/types.ts';
import { isObject, sessionIdFromPath, usageFrom, type JsonObject, type Session, type SessionCall } from './types.ts';

export const MINI_SWE_TOOL_FILE = 'bash_tool.json';
const DEFAULT_MODEL = 'mini-swe-agent';

/** Keys litellm/mini-swe-agent keep on messages that never reach the provider. */
const LOCAL_KEYS = new Set(['extra']);

function cleanMessage(m: JsonObject): ChatMessage {
  const out: JsonObject = {};
  for (const [k, v] of Object.entries(m)) {
    // null-valued litellm fields (function_call, provider_specific_fields) are dropped by the SDK too
    if (LOCAL_KEYS.has(k) || v === null) continue;
    out[k] = v;
  }
  return out as ChatMessage;
}

export function parseMiniSweTraj(doc: unknown, source: string, tools?: ToolDef[]): Session {
  if (!isObject(doc) || !Array.isArray(doc.messages)) throw new Error(`${source}: not a mini-swe-agent trajectory`);
  const info = isObject(doc.info) ? doc.info : {};
  const cfg = isObject(info.config) ? info.config : {};
  const modelCfg = isObject(cfg.model) ? cfg.model : {};
  const model = typeof modelCfg.model_name === 'string' ? modelCfg.model_name : DEFAULT_MODEL;
  const kwargs = isObject(modelCfg.model_kwargs) ? modelCfg.model_kwargs : {};
  const raw = doc.messages.filter(isObject);
  const cleaned = raw.map(cleanMessage);
  const calls: SessionCall[] = [];
  for (let i = 0; i < raw.length; i++) {
    if (raw[i].role !== 'assistant') continue;
    const body: ChatRequest = { model, messages: cleaned.slice(0, i).filter((m) => m.role !== 'exit') };
    if (tools?.length) body.tools = tools;
    if (typeof kwargs.temperature === 'number') body.temperature = kwargs.temperature;
    const extra = isObject(raw[i].extra) ? (raw[i].extra as JsonObject) : {};
    const resp = isObject(extra.response) ? extra.response : {};
    const call: SessionCall = { body };
    const u = usageFrom(resp.usage);
    if (u) call.recordedUsage = u;
    calls.push(call);
  }
  const id = sessionIdFromPath(source);
  return { id, source, calls };
}

export async function readMiniSweTraj(path: string): Promise<Session> {
  const raw = await readFile(path);
  const doc = JSON.parse((path.endsWith('.gz') ? gunzipSync(raw) : raw).toString('utf8')) as unknown;
  let tools: ToolDef[] | undefined;
  try {
    const t = JSON.parse(await readFile(join(dirname(path), MINI_SWE_TOOL_FILE), 'utf8')) as unknown;
    tools = Array.isArray(t) ? (t as ToolDef[]) : [t as ToolDef];
  } catch {
    tools = undefined; // no tool file next to it: the agent's tools are unknown, send none
  }
  return parseMiniSweTraj(doc, path, tools);
}
