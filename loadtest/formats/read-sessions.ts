// Entry point of the input formats: files or folders in, one Session per recognised file out,
// sorted by path so every run sees the same traffic in the same order.
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { readAiderHistory } from './aider.ts';
import { readMiniSweTraj } from './mini-swe-agent.ts';
import { readRequestStream } from './request-stream.ts';
import { readSweAgentTraj } from './swe-agent.ts';
import type { Session } from './types.ts';

export type FormatName = 'request-stream' | 'mini-swe-agent' | 'swe-agent' | 'aider';

export function detectFormat(path: string): FormatName | undefined {
  if (path.endsWith('.jsonl') || path.endsWith('.jsonl.gz')) return 'request-stream';
  if (path.endsWith('.traj.json') || path.endsWith('.traj.json.gz')) return 'mini-swe-agent';
  if (path.endsWith('.traj')) return 'swe-agent';
  if (path.endsWith('.llm.history')) return 'aider';
  return undefined;
}

async function expand(path: string): Promise<string[]> {
  const st = await stat(path);
  if (!st.isDirectory()) return [path];
  const out: string[] = [];
  for (const name of (await readdir(path)).sort()) {
    const p = join(path, name);
    const s = await stat(p);
    if (s.isDirectory()) out.push(...(await expand(p)));
    else if (detectFormat(p)) out.push(p);
  }
  return out;
}

export async function readSession(path: string): Promise<Session> {
  switch (detectFormat(path)) {
    case 'request-stream':
      return readRequestStream(path);
    case 'mini-swe-agent':
      return readMiniSweTraj(path);
    case 'swe-agent':
      return readSweAgentTraj(path);
    case 'aider':
      return readAiderHistory(path);
    default:
      throw new Error(
        `${path}: unknown trajectory format (expected .jsonl[.gz], .traj.json[.gz], .traj or .llm.history)`,
      );
  }
}

export async function readSessions(paths: string[]): Promise<Session[]> {
  const files: string[] = [];
  for (const p of paths) files.push(...(await expand(p)));
  const unique = [...new Set(files)].sort();
  const sessions: Session[] = [];
  for (const f of unique) {
    const s = await readSession(f);
    if (s.calls.length) sessions.push(s);
  }
  return sessions;
}
