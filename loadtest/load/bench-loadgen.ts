// ctxgate bench loadgen: is `ctxgate loadtest` ever the bottleneck, and does the hit rate it
// reports agree with the gateway's own counters?
//  1. headroom: against a zero-latency upstream in a child process, plain autocannon on one static
//     body (a mid-session body of the same agent traffic) vs `loadtest` playing the sessions,
//     same connections and duration, alternated `rounds` times; the median ratio is reported
//     (target ≥ 0.8).
//  2. agreement: reference workers and a gateway with the default pipeline in-process; the hit rate
//     `loadtest` computes from the answers vs ctxgate_cached_tokens_total ÷ ctxgate_prompt_tokens_total
//     over the same run (target within 1 point). Figures from the reference worker, not a GPU.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { startFleet } from '../replay/fleet.ts';
import { generateSessions } from '../synth/index.ts';
import { runLoad, type LoadOptions } from './driver.ts';
import { buildRequest } from './protocols.ts';
import { SessionPlayer } from './traffic.ts';
import { summariseLoad } from './summary.ts';

export const DEFAULT_LOADGEN_CONNECTIONS = 64;
export const DEFAULT_LOADGEN_DURATION_S = 5;
export const DEFAULT_LOADGEN_ROUNDS = 5;

async function fakeUpstream(): Promise<{ proc: ChildProcess; url: string }> {
  const proc = spawn(
    process.execPath,
    ['--import', 'tsx', fileURLToPath(new URL('../fake-upstream.ts', import.meta.url)), '0'],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  proc.stdout!.setEncoding('utf8');
  let buf = '';
  const url = await new Promise<string>((resolve, reject) => {
    proc.once('exit', (code) => reject(new Error(`fake upstream exited (${code})`)));
    proc.stdout!.on('data', (d: string) => {
      buf += d;
      const i = buf.indexOf('\n');
      if (i >= 0) resolve(buf.slice(0, i).trim());
    });
  });
  return { proc, url };
}

function staticRps(url: string, body: string | Buffer, connections: number, durationS: number): Promise<number> {
  return new Promise((resolve, reject) => {
    autocannon(
      {
        url: `${url}/v1/chat/completions`,
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
        connections,
        duration: durationS,
      },
      (err, r) => (err ? reject(err) : resolve(r.requests.total / durationS)),
    );
  });
}

const median = (xs: number[]) => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)];

export interface LoadgenResult {
  connections: number;
  duration_s: number;
  static_body_bytes: number;
  rounds: { autocannon_static_rps: number; loadtest_rps: number; ratio: number }[];
  headroom_ratio_median: number;
  agreement: { loadtest_hit_rate: number; gateway_hit_rate: number; diff_points: number; requests: number };
}

export async function runLoadgenBench(o: {
  connections: number;
  durationS: number;
  rounds: number;
  log: (s: string) => void;
}): Promise<LoadgenResult> {
  const sessions = generateSessions({ count: Math.max(2 * o.connections, 12) });
  // the static body: a mid-session body of the same traffic
  const mid = sessions[0].calls[Math.floor(sessions[0].calls.length / 2)];
  const player = new SessionPlayer({ ...sessions[0], calls: [mid] }, 0);
  const staticBody = buildRequest('chat', player.body(), {
    model: 'bench-model',
    stream: false,
    maxTokens: 16,
    sessionId: 'static',
  }).body;
  const up = await fakeUpstream();
  const rounds: LoadgenResult['rounds'] = [];
  try {
    const base: LoadOptions = {
      target: up.url,
      api: 'chat',
      model: 'bench-model',
      sessions,
      connections: o.connections,
      durationS: o.durationS,
      rate: 0,
      thinkMs: 0,
      stream: false,
      maxTokens: 16,
      timeoutS: 30,
    };
    await staticRps(up.url, staticBody, o.connections, 1); // warm-up
    for (let i = 0; i < o.rounds; i++) {
      const a = await staticRps(up.url, staticBody, o.connections, o.durationS);
      const run = await runLoad(base);
      const b = run.samples.length / (run.wallMs / 1000);
      rounds.push({
        autocannon_static_rps: Math.round(a),
        loadtest_rps: Math.round(b),
        ratio: Math.round((b / a) * 1000) / 1000,
      });
      o.log(
        `round ${i + 1}: autocannon static body ${Math.round(a)} req/s, loadtest sessions ${Math.round(b)} req/s, ratio ${(b / a).toFixed(2)}`,
      );
    }
  } finally {
    up.proc.kill('SIGTERM');
    if (up.proc.exitCode === null) await once(up.proc, 'exit').catch(() => undefined);
  }
  const fleet = await startFleet({
    workers: 4,
    flavor: 'vllm',
    kvTokens: 400_000,
    blockSize: 16,
    tokenizer: 'qwen3',
    timeScale: 0,
    seed: 1,
    layout: 'ctxgate',
    policy: 'ctxgate',
    model: 'qwen3',
  });
  let agreement: LoadgenResult['agreement'];
  try {
    const run = await runLoad({
      target: fleet.url,
      api: 'chat',
      model: 'qwen3',
      sessions,
      connections: 8,
      durationS: o.durationS * 2,
      rate: 0,
      thinkMs: 0,
      stream: true,
      maxTokens: 64,
      timeoutS: 60,
    });
    const s = summariseLoad(run, { target: fleet.url, api: 'chat', stream: true, callsPerSession: new Map() });
    const metrics = await (await fetch(`${fleet.url}/metrics`)).text();
    const total = (name: string) => {
      let sum = 0;
      for (const m of metrics.matchAll(new RegExp(`^ctxgate_${name}_total\\{[^}]*\\} (\\d+(?:\\.\\d+)?)`, 'gm')))
        sum += Number(m[1]);
      return sum;
    };
    const gw = total('prompt_tokens') > 0 ? total('cached_tokens') / total('prompt_tokens') : 0;
    agreement = {
      loadtest_hit_rate: s.hit_rate,
      gateway_hit_rate: Math.round(gw * 10_000) / 10_000,
      diff_points: Math.round(Math.abs(s.hit_rate - gw) * 10_000) / 100,
      requests: s.requests,
    };
    o.log(
      `agreement: loadtest hit rate ${(s.hit_rate * 100).toFixed(2)} %, gateway counters ${(gw * 100).toFixed(2)} % over ${s.requests} requests (reference workers)`,
    );
  } finally {
    await fleet.close();
  }
  return {
    connections: o.connections,
    duration_s: o.durationS,
    static_body_bytes: Buffer.byteLength(staticBody),
    rounds,
    headroom_ratio_median: median(rounds.map((r) => r.ratio)),
    agreement,
  };
}

export const help = `ctxgate bench loadgen [--json] [--connections N] [--duration S] [--rounds N]

Checks that ctxgate loadtest is never the bottleneck: against a zero-latency upstream, plain
autocannon on one static body (a mid-session body of the same traffic) vs loadtest playing
multi-turn agent sessions, ${DEFAULT_LOADGEN_CONNECTIONS} connections, alternated rounds, median ratio (target ≥ 0.8).
Then checks that the hit rate loadtest reports equals the gateway's own counters (reference workers).`;

export async function run(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      json: { type: 'boolean' },
      connections: { type: 'string' },
      duration: { type: 'string' },
      rounds: { type: 'string' },
    },
  });
  const res = await runLoadgenBench({
    connections: Number(values.connections ?? DEFAULT_LOADGEN_CONNECTIONS),
    durationS: Number(values.duration ?? DEFAULT_LOADGEN_DURATION_S),
    rounds: Number(values.rounds ?? DEFAULT_LOADGEN_ROUNDS),
    log: values.json ? () => {} : (s) => process.stdout.write(`${s}\n`),
  });
  if (values.json) process.stdout.write(`${JSON.stringify(res, null, 2)}\n`);
  else
    process.stdout.write(
      `headroom: loadtest ÷ plain autocannon, median of ${res.rounds.length}: ${res.headroom_ratio_median.toFixed(2)}× (target ≥ 0.8); hit-rate difference ${res.agreement.diff_points} points (target ≤ 1)\n`,
    );
  return 0;
}
