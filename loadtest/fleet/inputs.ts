// Reads `bench fleet` inputs. Mooncake JSONL files (recognised by their first record's hash_ids)
// are merged on one clock, sorted, rate-scaled and cut to the duration; one interner for all
// files, so equal hash-id prefixes in different files share blocks, as in the released traces.
// Anything else is an agent session (a folder of them, the gateway's capture files, request-stream
// JSONL, mini-swe-agent, SWE-agent, aider; loadtest/formats) replayed closed-loop (sessions.ts).
// One run takes one kind: the two have no common block namespace.
import { open, readFile, stat } from 'node:fs/promises';
import { gunzipSync } from 'node:zlib';
import { readSessions } from '../formats/read-sessions.ts';
import { type SessionInputOptions, sessionRequests } from './sessions.ts';
import { arrange, ChainInterner, type FleetRequest, parseMooncake } from './trace.ts';
import { twoKindsJsonl } from './two-kinds.ts';

/** `two-kinds` or `two-kinds:SEED` in place of a file: the generated two-tenant workload
 *  (two-kinds.ts, its defaults), so the figures taken on it run from the command line. */
export const GENERATED_TWO_KINDS = /^two-kinds(?::(\d+))?$/;

export interface InputOptions {
  rateScale: number;
  durationS?: number;
  /** For session inputs (tokenizer, block size, session rate, think time, seed). */
  sessions?: Omit<SessionInputOptions, 'durationS'>;
}

function firstLine(text: string): string {
  for (const line of text.split('\n', 64)) if (line.trim()) return line.trim();
  return '';
}

export function isMooncakeText(text: string): boolean {
  try {
    const o = JSON.parse(firstLine(text)) as Record<string, unknown>;
    return typeof o === 'object' && o !== null && Array.isArray(o.hash_ids) && 'input_length' in o;
  } catch {
    return false;
  }
}

/** Whether `path` is a Mooncake trace: a plain or gzipped JSONL file whose first record has hash_ids. */
async function isMooncakeFile(path: string): Promise<boolean> {
  if (GENERATED_TWO_KINDS.test(path)) return true;
  if ((await stat(path)).isDirectory() || !/\.jsonl(\.gz)?$/.test(path)) return false;
  if (path.endsWith('.gz')) return isMooncakeText(gunzipSync(await readFile(path)).toString('utf8'));
  // the first line only: a capture file's lines can be megabytes
  const fh = await open(path, 'r');
  try {
    const buf = Buffer.alloc(64 * 1024);
    const { bytesRead } = await fh.read(buf, 0, buf.length, 0);
    return isMooncakeText(buf.toString('utf8', 0, bytesRead));
  } finally {
    await fh.close();
  }
}

/** Whether the inputs are agent sessions (closed loop) rather than Mooncake traces. */
export async function inputKind(paths: string[]): Promise<'mooncake' | 'sessions'> {
  const kinds = await Promise.all(paths.map(isMooncakeFile));
  if (kinds.every(Boolean)) return 'mooncake';
  if (kinds.some(Boolean))
    throw new Error(
      `give Mooncake traces or agent sessions, not both (Mooncake: ${paths.filter((_, i) => kinds[i]).join(', ')})`,
    );
  return 'sessions';
}

export async function loadFleetInputs(paths: string[], o: InputOptions): Promise<FleetRequest[]> {
  const chain = new ChainInterner();
  if ((await inputKind(paths)) === 'sessions') {
    if (!o.sessions) throw new Error('session inputs need the session options');
    const sessions = await readSessions(paths);
    if (sessions.length === 0)
      throw new Error(
        `${paths.join(', ')}: no sessions (.jsonl[.gz] captures or request streams, .traj.json, .traj, .llm.history)`,
      );
    return sessionRequests(sessions, chain, {
      ...o.sessions,
      ratePerS: o.sessions.ratePerS * o.rateScale,
      durationS: o.durationS,
    });
  }
  const all: FleetRequest[] = [];
  for (const p of paths) {
    const g = GENERATED_TWO_KINDS.exec(p);
    const raw = g ? undefined : await readFile(p);
    const text = raw
      ? (p.endsWith('.gz') ? gunzipSync(raw) : raw).toString('utf8')
      : twoKindsJsonl(g?.[1] ? { seed: Number(g[1]) } : {});
    all.push(...parseMooncake(text, p, chain, all.length));
  }
  return arrange(all, o.rateScale, o.durationS);
}
