// SWE-agent `*.traj`: `history` is the message list the agent built; one call per assistant
// entry, sending every entry before it as SWE-agent's history_to_messages did: role + content,
// tool_calls on actions, and tool observations with `tool_call_ids[0]` as `tool_call_id`
// (SWE-agent sends one tool call per observation). Bookkeeping keys (thought, action, agent,
// message_type, is_demo) are not sent. Observations of non-function-calling configs sit in
// `user` messages and stay there. O(calls × history).
import { readFile } from 'node:fs/promises';
import type { ChatMessage, ChatRequest } from '../../middleware/types.ts';
import { isObject, sessionIdFromPath, type JsonObject, type Session, type SessionCall } from './types.ts';

const DEFAULT_MODEL = 'swe-agent';

function toMessage(h: JsonObject): ChatMessage {
  const role = String(h.role);
  if (role === 'tool') {
    const ids = Array.isArray(h.tool_call_ids) ? h.tool_call_ids : [];
    const id = typeof h.tool_call_id === 'string' ? h.tool_call_id : ids.length ? String(ids[0]) : undefined;
    const m: ChatMessage = { role, content: h.content as ChatMessage['content'] };
    if (id !== undefined) m.tool_call_id = id;
    return m;
  }
  const m: ChatMessage = { role, content: h.content as ChatMessage['content'] };
  if (Array.isArray(h.tool_calls)) m.tool_calls = h.tool_calls as ChatMessage['tool_calls'];
  if (Array.isArray(h.thinking_blocks) && h.thinking_blocks.length) m.thinking_blocks = h.thinking_blocks;
  if (h.cache_control !== undefined) m.cache_control = h.cache_control;
  return m;
}

function modelName(doc: JsonObject): string {
  let rc: unknown = doc.replay_config;
  if (typeof rc === 'string') {
    try {
      rc = JSON.parse(rc);
    } catch {
      rc = undefined;
    }
  }
  const agent = isObject(rc) && isObject(rc.agent) ? rc.agent : undefined;
  const model = agent && isObject(agent.model) ? agent.model : undefined;
  return model && typeof model.name === 'string' ? model.name : DEFAULT_MODEL;
}

export function parseSweAgentTraj(doc: unknown, source: string): Session {
  if (!isObject(doc) || !Array.isArray(doc.history))
    throw new Error(`${source}: not a SWE-agent trajectory (no history)`);
  const history = doc.history.filter(isObject);
  const messages = history.map(toMessage);
  const model = modelName(doc);
  const calls: SessionCall[] = [];
  for (let i = 0; i < history.length; i++) {
    if (history[i].role !== 'assistant') continue;
    const body: ChatRequest = { model, messages: messages.slice(0, i) };
    calls.push({ body });
  }
  return { id: sessionIdFromPath(source), source, calls };
}

export async function readSweAgentTraj(path: string): Promise<Session> {
  return parseSweAgentTraj(JSON.parse(await readFile(path, 'utf8')) as unknown, path);
}
