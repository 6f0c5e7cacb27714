// Load and process plumbing of `bench overhead`: autocannon runs with per-response times (its own
// histogram keeps whole milliseconds), child processes that announce themselves with one stdout
// line and then answer line commands, and the Portkey gateway as a peer baseline.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createRequire } from 'node:module';
import autocannon from 'autocannon';
import { freePort } from '../chaos/redis-proc.ts';

export interface LoadResult {
  p50: number;
  p99: number;
  /** The 99.9th percentile: where the rarer, longer pauses (mark-compacts, scavenges of a large
   *  young generation) show when the p99 no longer does. */
  p999: number;
  rps: number;
  requests: number;
  errors: number;
  /** With `keepCalls`: each response in order, its end (ms since the epoch) and its latency (ms). */
  calls?: { end: number[]; ms: number[] };
}

export interface LoadSpec {
  url: string;
  /** Route under url (default: the chat completions route). */
  path?: string;
  durationS: number;
  connections: number;
  headers?: Record<string, string>;
  /** A fixed body, or one per request (growing sessions). */
  body: string | (() => string);
  /** Stop after this many requests instead of after durationS (req/s then over the time taken). */
  amount?: number;
  /** Keep each response's end time and latency (LoadResult.calls). */
  keepCalls?: boolean;
}

/** Sends each session's earlier calls (`traffic.prime()`), then as many next calls as it takes to
 *  finish the primer's count, so the target holds every later measured call's history. */
export async function primeSessions(
  traffic: { prime(): string[]; next(): string },
  spec: Omit<LoadSpec, 'body' | 'amount'>,
): Promise<void> {
  const primer = traffic.prime();
  let p = 0;
  await load({ ...spec, body: () => primer[p++] ?? traffic.next(), amount: primer.length });
}

export function percentile(sorted: Float64Array, q: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

/** The rank from the slowest of the call `percentile(sorted, q)` picks out of `n`: the p99.9 of
 *  1,000-3,000 calls is the 1st-3rd slowest, a handful of calls and no estimate of a tail. */
export function rankFromSlowest(n: number, q: number): number {
  return n === 0 ? 0 : n - Math.min(n - 1, Math.floor(q * n));
}

export function load(spec: LoadSpec): Promise<LoadResult> {
  const times: number[] = [];
  const ends: number[] = [];
  const headers = { 'content-type': 'application/json', authorization: 'Bearer bench', ...spec.headers };
  const next = spec.body;
  const requests =
    typeof next === 'string'
      ? undefined
      : [{ method: 'POST' as const, setupRequest: (r: autocannon.Request) => ({ ...r, body: next() }) }];
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const inst = autocannon(
      {
        url: `${spec.url}${spec.path ?? '/v1/chat/completions'}`,
        method: 'POST',
        headers,
        ...(typeof next === 'string' ? { body: next } : { requests }),
        connections: spec.connections,
        ...(spec.amount !== undefined ? { amount: spec.amount } : { duration: spec.durationS }),
      },
      (err, r) => {
        if (err) return reject(err);
        const sorted = Float64Array.from(times).sort();
        // a run by count takes what it takes: its rate is over that time, not durationS
        const seconds = spec.amount !== undefined ? (performance.now() - started) / 1000 : spec.durationS;
        resolve({
          p50: percentile(sorted, 0.5),
          p99: percentile(sorted, 0.99),
          p999: percentile(sorted, 0.999),
          rps: seconds > 0 ? times.length / seconds : 0,
          requests: times.length,
          errors: r.errors + r.non2xx,
          ...(spec.keepCalls ? { calls: { end: ends, ms: times } } : {}),
        });
      },
    );
    inst.on('response', (_client, _status, _bytes, responseTime) => {
      times.push(responseTime);
      if (spec.keepCalls) ends.push(performance.timeOrigin + performance.now());
    });
  });
}

/** A child process that prints one ready line, then answers one stdout line per stdin command. */
export interface Child {
  proc: ChildProcess;
  line: string;
  ask(cmd: string): Promise<string>;
  stop(): Promise<void>;
}

export async function child(
  file: string,
  args: string[],
  env: Record<string, string> = {},
  nodeArgs: string[] = [],
): Promise<Child> {
  const proc = spawn(process.execPath, [...nodeArgs, '--import', 'tsx', file, ...args], {
    stdio: ['pipe', 'pipe', 'inherit'],
    env: { ...process.env, ...env },
  });
  const waiting: { resolve: (l: string) => void; reject: (e: Error) => void }[] = [];
  const lines: string[] = [];
  let buf = '';
  proc.stdout!.setEncoding('utf8');
  proc.stdout!.on('data', (d: string) => {
    buf += d;
    for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
      const l = buf.slice(0, i);
      buf = buf.slice(i + 1);
      const w = waiting.shift();
      if (w) w.resolve(l);
      else lines.push(l);
    }
  });
  proc.once('exit', (code) => {
    for (const w of waiting.splice(0)) w.reject(new Error(`${file} exited (${code})`));
  });
  const nextLine = (): Promise<string> => {
    const l = lines.shift();
    if (l !== undefined) return Promise.resolve(l);
    if (proc.exitCode !== null) return Promise.reject(new Error(`${file} exited (${proc.exitCode})`));
    return new Promise((resolve, reject) => waiting.push({ resolve, reject }));
  };
  const line = await nextLine();
  return {
    proc,
    line,
    ask: (cmd) => {
      proc.stdin!.write(cmd + '\n');
      return nextLine();
    },
    stop: () => stopProc(proc),
  };
}

async function stopProc(p: ChildProcess): Promise<void> {
  if (p.exitCode !== null || p.signalCode !== null) return;
  p.kill('SIGTERM');
  await once(p, 'exit').catch(() => undefined);
}

export interface Portkey {
  url: string;
  pid: number | undefined;
  /** Headers that route a request through Portkey to `upstream` as an OpenAI-compatible provider. */
  headers: Record<string, string>;
  stop(): Promise<void>;
}

const PORTKEY_START_MS = 30_000;

/**
 * The Portkey gateway (npm @portkey-ai/gateway, a dev dependency) in its own process, headless,
 * forwarding to `upstream` as provider `openai` with a custom host. Non-stream only: on Node 20
 * its streaming path fails (it appends to an immutable fetch Headers object).
 */
/** Starts the Portkey gateway in a node started with `nodeArgs` (the bench gives it the proxies' flags). */
export async function startPortkey(upstream: string, nodeArgs: readonly string[] = []): Promise<Portkey> {
  const entry = createRequire(import.meta.url).resolve('@portkey-ai/gateway/build/start-server.js');
  const port = await freePort();
  const proc = spawn(process.execPath, [...nodeArgs, entry, `--port=${port}`, '--headless'], {
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...process.env, NODE_ENV: 'production' },
  });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + PORTKEY_START_MS;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`portkey gateway exited (${proc.exitCode}) during start`);
    try {
      if ((await fetch(url + '/')).ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      await stopProc(proc);
      throw new Error('portkey gateway did not start in time');
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  return {
    url,
    pid: proc.pid,
    headers: { 'x-portkey-provider': 'openai', 'x-portkey-custom-host': `${upstream}/v1` },
    stop: () => stopProc(proc),
  };
}
