// Traffic capture: writes live chat requests in the request-stream JSONL format (one file per
// session under <dir>/<tenant>/, `_meta {session, turn, tenant, time, …}` per line) so teams can
// `ctxgate bench replay` their own traffic. Sampling is per session (a stable hash decides, so a
// session is captured whole or not at all), total bytes are capped, secrets are redacted before
// anything touches disk. A client of another API (Anthropic Messages, OpenAI Responses) also gets
// its own body recorded, redacted, in its API's shape as `_meta.client: {api, body}`: the line
// stays a replayable chat request, and the exact request the agent sent is kept.
// record() never throws into the request path; O(body) per call.
import { createHash } from 'node:crypto';
import { appendFile, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { redactDeep } from '../../middleware/redaction/redact.ts';
import type { ChatRequest } from '../../middleware/types.ts';

export const DEFAULT_MAX_OPEN_SESSIONS = 10_000;
export const NO_SESSION = 'no-session';
const MAX_NAME_CHARS = 96;

export interface CaptureOptions {
  dir: string;
  /** Share of sessions captured, 0..1. */
  sampleRate: number;
  /** Cap on bytes written by this capture; lines past it are dropped (and counted). */
  maxBytes: number;
  /** true (default): redact secrets with middleware/redaction; or a custom function. */
  redact?: boolean | ((body: ChatRequest) => ChatRequest);
  /** Sessions whose turn counter is remembered (oldest forgotten first). */
  maxOpenSessions?: number;
}

export interface CaptureMeta {
  recorded_usage?: { prompt_tokens: number; cached_tokens: number; completion_tokens: number };
  [k: string]: unknown;
}

export interface CaptureStats {
  recorded: number;
  skipped_sampling: number;
  dropped_size: number;
  errors: number;
  bytes: number;
}

export interface Capture {
  record(
    tenant: string,
    sessionId: string,
    body: ChatRequest,
    meta?: CaptureMeta,
    client?: { api: string; body: unknown },
  ): void;
  /** Waits for pending writes. */
  flush(): Promise<void>;
  close(): Promise<void>;
  stats(): CaptureStats;
  /** Where a session's file is (whether or not it is sampled). */
  pathFor(tenant: string, sessionId: string): string;
}

/** File-system-safe name; a hash suffix keeps distinct raw names distinct after sanitising. */
export function safeName(raw: string): string {
  const clean = raw
    .replace(/[^A-Za-z0-9._-]/g, '_')
    .replace(/^\.+/, '_')
    .slice(0, MAX_NAME_CHARS);
  if (clean === raw && clean.length > 0) return clean;
  return `${clean || 'x'}-${createHash('sha256').update(raw).digest('hex').slice(0, 8)}`;
}

/** Stable per-session sampling decision in [0,1). */
export function sessionSample(tenant: string, sessionId: string): number {
  const h = createHash('sha256').update(`${tenant}\0${sessionId}`).digest();
  return h.readUInt32BE(0) / 2 ** 32;
}

export function createCapture(o: CaptureOptions): Capture {
  const maxOpen = o.maxOpenSessions ?? DEFAULT_MAX_OPEN_SESSIONS;
  const redactFn =
    typeof o.redact === 'function'
      ? o.redact
      : o.redact === false
        ? (b: ChatRequest) => b
        : (b: ChatRequest) => redactDeep(b).value;
  // The client's own body is redacted with the built-in rules unless redaction is off entirely.
  const redactClient = o.redact === false ? (b: unknown) => b : (b: unknown) => redactDeep(b).value;
  const turns = new Map<string, number>();
  const chains = new Map<string, Promise<void>>();
  const madeDirs = new Map<string, Promise<unknown>>();
  const st: CaptureStats = { recorded: 0, skipped_sampling: 0, dropped_size: 0, errors: 0, bytes: 0 };
  let closed = false;

  const pathFor = (tenant: string, sessionId: string) =>
    join(o.dir, safeName(tenant || 'default'), `${safeName(sessionId || NO_SESSION)}.jsonl`);

  const nextTurn = (key: string): number => {
    const t = turns.get(key) ?? 0;
    turns.delete(key); // re-insert: Map order doubles as LRU order
    turns.set(key, t + 1);
    if (turns.size > maxOpen) turns.delete(turns.keys().next().value as string);
    return t;
  };

  return {
    pathFor,
    stats: () => ({ ...st }),
    record(tenant, sessionId, body, meta = {}, client) {
      if (closed) return;
      try {
        const sid = sessionId || NO_SESSION;
        if (!(sessionSample(tenant, sid) < o.sampleRate)) {
          st.skipped_sampling++;
          return;
        }
        const key = `${tenant}\0${sid}`;
        const clean = redactFn(body);
        const { _meta: _drop, ...rest } = clean as ChatRequest & { _meta?: unknown };
        const turn = nextTurn(key);
        const m: CaptureMeta = { ...meta, session: sid, turn, tenant, time: new Date().toISOString() };
        if (client) m.client = { api: client.api, body: redactClient(client.body) };
        const line = `${JSON.stringify({ ...rest, _meta: m })}\n`;
        const bytes = Buffer.byteLength(line);
        if (st.bytes + bytes > o.maxBytes) {
          st.dropped_size++;
          return;
        }
        st.bytes += bytes;
        const file = pathFor(tenant, sid);
        const dir = join(o.dir, safeName(tenant || 'default'));
        let made = madeDirs.get(dir);
        if (!made) madeDirs.set(dir, (made = mkdir(dir, { recursive: true })));
        const prev = chains.get(file) ?? Promise.resolve();
        const next = prev
          .then(() => made)
          .then(() => appendFile(file, line))
          .then(() => void st.recorded++)
          .catch(() => void st.errors++);
        chains.set(file, next);
        void next.then(() => {
          if (chains.get(file) === next) chains.delete(file);
        });
      } catch {
        st.errors++;
      }
    },
    async flush() {
      while (chains.size) await Promise.all([...chains.values()]);
    },
    async close() {
      closed = true;
      await this.flush();
    },
  };
}
