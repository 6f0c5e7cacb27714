// ctxgate bench overhead: what the gateway adds on top of a bare reverse proxy. One run measures,
// with autocannon, the same chat bodies (~1k and ~16k tokens, stream and not) sent directly to a
// zero-latency upstream, through a bare @fastify/http-proxy, and through ctxgate (passthrough).
// Upstream and proxies run in child processes so the load generator does not share their loop.
// Settings: duration per run (default 3 s), connections (default 8).
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';

export const DEFAULT_DURATION_S = 3;
export const DEFAULT_CONNECTIONS = 8;
const WARMUP_S = 1;
const BYTES_PER_TOKEN = 4;

export interface OverheadCase {
  name: string;
  target: 'direct' | 'bare_proxy' | 'ctxgate';
  tokens: number;
  stream: boolean;
  p50_ms: number;
  p99_ms: number;
  rps: number;
  errors: number;
}

export interface OverheadResult {
  cases: OverheadCase[];
  /** ctxgate minus bare proxy, 16k-token non-stream case. */
  added_p50_ms: number;
  added_p99_ms: number;
  throughput_ratio_vs_bare_proxy: number;
  duration_s: number;
  connections: number;
}

export interface OverheadOptions {
  durationS?: number;
  connections?: number;
  log?: (line: string) => void;
}

/** A chat body of about `tokens` tokens: an agent-like history of tool outputs. */
export function chatBody(tokens: number, stream: boolean): string {
  const line = 'src/service/handler.ts:142 validate_claims() returned status=ok elapsed=12ms\n';
  const chunk = line.repeat(Math.ceil((tokens * BYTES_PER_TOKEN) / 4 / line.length));
  const messages = [
    { role: 'system', content: 'You are a coding agent.' },
    { role: 'user', content: chunk },
    { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'run', arguments: '{"cmd":"npm test"}' } }] },
    { role: 'tool', tool_call_id: 'c1', content: chunk },
    { role: 'assistant', content: chunk },
    { role: 'user', content: chunk },
  ];
  return JSON.stringify({ model: 'bench-model', messages, max_tokens: 16, temperature: 0, ...(stream ? { stream: true } : {}) });
}

async function child(file: string, args: string[]): Promise<{ proc: ChildProcess; line: string }> {
  const proc = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(new URL(file, import.meta.url)), ...args], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let buf = '';
  proc.stdout!.setEncoding('utf8');
  const line = await new Promise<string>((resolve, reject) => {
    proc.once('exit', (code) => reject(new Error(`${file} exited (${code}) before it was ready`)));
    proc.stdout!.on('data', (d: string) => {
      buf += d;
      const i = buf.indexOf('\n');
      if (i >= 0) resolve(buf.slice(0, i));
    });
  });
  return { proc, line };
}

interface LoadResult {
  p50: number;
  p99: number;
  rps: number;
  errors: number;
}

function percentile(sorted: Float64Array, q: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

/** autocannon's own histogram keeps whole milliseconds; per-response times keep the fraction. */
function load(url: string, body: string, durationS: number, connections: number): Promise<LoadResult> {
  const times: number[] = [];
  return new Promise((resolve, reject) => {
    const inst = autocannon(
      {
        url: `${url}/v1/chat/completions`,
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer bench' },
        body,
        connections,
        duration: durationS,
      },
      (err, r) => {
        if (err) return reject(err);
        const sorted = Float64Array.from(times).sort();
        resolve({ p50: percentile(sorted, 0.5), p99: percentile(sorted, 0.99), rps: times.length / durationS, errors: r.errors + r.non2xx });
      },
    );
    inst.on('response', (_client, _status, _bytes, responseTime) => times.push(responseTime));
  });
}

export async function runOverheadBench(opts: OverheadOptions = {}): Promise<OverheadResult> {
  const durationS = opts.durationS ?? DEFAULT_DURATION_S;
  const connections = opts.connections ?? DEFAULT_CONNECTIONS;
  const log = opts.log ?? (() => undefined);
  const up = await child('./fake-upstream.ts', ['0']);
  const children = [up.proc];
  try {
    const px = await child('./overhead-proxies.ts', [up.line.trim()]);
    children.push(px.proc);
    const urls = JSON.parse(px.line) as { bare: string; ctxgate: string };
    const targets = { direct: up.line.trim(), bare_proxy: urls.bare, ctxgate: urls.ctxgate } as const;
    const cases: OverheadCase[] = [];
    for (const tokens of [1000, 16000]) {
      for (const stream of [false, true]) {
        const body = chatBody(tokens, stream);
        for (const target of ['direct', 'bare_proxy', 'ctxgate'] as const) {
          await load(targets[target], body, WARMUP_S, connections);
          const r = await load(targets[target], body, durationS, connections);
          const c: OverheadCase = {
            name: `${target} ${tokens / 1000}k ${stream ? 'stream' : 'non-stream'}`,
            target,
            tokens,
            stream,
            p50_ms: r.p50,
            p99_ms: r.p99,
            rps: r.rps,
            errors: r.errors,
          };
          cases.push(c);
          log(`${c.name.padEnd(28)} p50 ${c.p50_ms.toFixed(2).padStart(7)} ms  p99 ${c.p99_ms.toFixed(2).padStart(7)} ms  ${c.rps.toFixed(0).padStart(6)} req/s${c.errors ? `  errors ${c.errors}` : ''}`);
        }
      }
    }
    const pick = (t: OverheadCase['target']) => cases.find((c) => c.target === t && c.tokens === 16000 && !c.stream)!;
    const bare = pick('bare_proxy');
    const gw = pick('ctxgate');
    return {
      cases,
      added_p50_ms: gw.p50_ms - bare.p50_ms,
      added_p99_ms: gw.p99_ms - bare.p99_ms,
      throughput_ratio_vs_bare_proxy: bare.rps > 0 ? gw.rps / bare.rps : 0,
      duration_s: durationS,
      connections,
    };
  } finally {
    for (const p of children) {
      p.kill('SIGTERM');
      if (p.exitCode === null) await once(p, 'exit').catch(() => undefined);
    }
  }
}

export const help = `ctxgate bench overhead [--json] [--duration S] [--connections N]

Measures the latency and throughput ctxgate adds over a bare @fastify/http-proxy: ~1k and ~16k-token
chat bodies, streaming and not, sent directly to a zero-latency upstream, through the bare proxy
and through ctxgate (layout passthrough). Prints p50/p99 and req/s of each, and ctxgate's added
p50/p99 and throughput ratio for the 16k non-stream case. Targets: +p50 <= 1 ms, +p99 <= 5 ms,
throughput >= 0.7x the bare proxy. About a minute with the defaults (${DEFAULT_DURATION_S} s per run).`;

export async function run(argv: string[]): Promise<number> {
  const { values } = parseArgs({ args: argv, options: { json: { type: 'boolean' }, duration: { type: 'string' }, connections: { type: 'string' } } });
  const res = await runOverheadBench({
    durationS: values.duration ? Number(values.duration) : undefined,
    connections: values.connections ? Number(values.connections) : undefined,
    log: values.json ? undefined : (l) => process.stdout.write(l + '\n'),
  });
  if (values.json) {
    process.stdout.write(JSON.stringify(res, null, 2) + '\n');
  } else {
    process.stdout.write(
      `\nctxgate vs bare proxy (16k non-stream): added p50 ${res.added_p50_ms.toFixed(2)} ms, added p99 ${res.added_p99_ms.toFixed(2)} ms, ` +
        `throughput ${res.throughput_ratio_vs_bare_proxy.toFixed(2)}x\n`,
    );
  }
  return 0;
}
