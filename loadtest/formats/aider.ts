// aider `.aider.llm.history`: each `TO LLM <ts>` block is one call, ending at `LLM RESPONSE <ts>`
// (the reply, not sent) or the next block. Messages are separated by `-------` lines; every line
// carries its role prefix (`SYSTEM`, `USER`, `ASSISTANT`), a role change also starts a message.
// O(lines).
import { readFile } from 'node:fs/promises';
import type { ChatMessage } from '../../middleware/types.ts';
import { sessionIdFromPath, type Session, type SessionCall } from './types.ts';

const DEFAULT_MODEL = 'aider';
const ROLE_RE = /^(SYSTEM|USER|ASSISTANT)(?: (.*))?$/;
const SEPARATOR = '-------';

export function parseAiderHistory(text: string, source: string): Session {
  const calls: SessionCall[] = [];
  let messages: ChatMessage[] | null = null;
  let cur: { role: string; lines: string[] } | null = null;
  const flush = () => {
    if (cur && messages) messages.push({ role: cur.role, content: cur.lines.join('\n') });
    cur = null;
  };
  const endBlock = () => {
    flush();
    if (messages?.length) calls.push({ body: { model: DEFAULT_MODEL, messages } });
    messages = null;
  };
  for (const rawLine of text.split('\n')) {
    const line = rawLine.endsWith('\r') ? rawLine.slice(0, -1) : rawLine;
    if (line.startsWith('TO LLM ')) {
      endBlock();
      messages = [];
      continue;
    }
    if (line.startsWith('LLM RESPONSE ')) {
      endBlock();
      continue;
    }
    if (!messages) continue; // inside a response: not part of any request
    if (line === SEPARATOR) {
      flush();
      continue;
    }
    const m = ROLE_RE.exec(line);
    if (!m) continue;
    const role = m[1].toLowerCase();
    if (cur && (cur as { role: string }).role !== role) flush();
    if (!cur) cur = { role, lines: [] };
    (cur as { lines: string[] }).lines.push(m[2] ?? '');
  }
  endBlock();
  return { id: sessionIdFromPath(source), source, calls };
}

export async function readAiderHistory(path: string): Promise<Session> {
  return parseAiderHistory(await readFile(path, 'utf8'), path);
}
