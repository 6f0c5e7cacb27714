// Replicas agree, as two processes: two `ctxgate serve` children sharing one real redis-server,
// four reference workers (vLLM flavour), the official openai SDK. One session's calls alternate
// between the two processes back to back (each call starts when the previous answer arrived): the
// session stays on one worker with the hit rate one gateway alone gets on the same conversation.
// replicas-agree.test.ts checks the same with two gateways assembled in one process; this one
// shares nothing but Redis and the workers (own event loop, policy, index, session table).
// A replica whose Redis call times out routes on its own view by design (the product's command
// timeouts are 50–100 ms and a child's cannot be raised): each such call shows in
// ctxgate_shared_index_errors_total, so the test allows one flip per counted error and none else
// (on a quiet machine: 0 errors, 0 flips). Each of the two shared paths alone keeps the replicas
// together (mutants: the session home read before select and stored after it disabled: 0 flips,
// the log of index changes still agrees; the log's pull disabled: 0 flips, the home suffices);
// with neither, 27 flips in 28 calls.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startSimWorker, type SimWorker } from '../../loadtest/sim-worker/index.ts';
import { until } from '../helpers/until.ts';
import { agentSession, type SessionRun } from '../helpers/agent-session.ts';

const BIN = new URL('../../bin/ctxgate.js', import.meta.url).pathname;
const redisUrl = inject('redisUrl');
const CALLS = 28;
/** Calls the second replica holds in flight while the session runs. */
const HELD = 3;
const SALT_SECRET = randomUUID();
const model = `m-${randomUUID().slice(0, 8)}`;

interface Replica {
  url: string;
  proc: ChildProcess;
  exit: Promise<number | null>;
}

let dir = '';
let workers: SimWorker[] = [];
let replicas: Replica[] = [];
let redis: Redis | undefined;

async function serve(name: string): Promise<Replica> {
  const cfg = join(dir, `${name}.yaml`);
  const workerRows = workers.map((w, i) => `      - { url: '${w.url}', id: w${i} }`).join('\n');
  writeFileSync(
    cfg,
    `listen: { host: 127.0.0.1, port: 0 }\nhealth: { interval_ms: 0 }\nshutdown: { deadline_ms: 500 }\nredis: { url: '${redisUrl}' }\n` +
      // replicas of one deployment share the salt secret (else each salts its tenants' prompts apart)
      `tenancy: { cache_salt_secret: '${SALT_SECRET}' }\n` +
      // the ledger in the test's own folder, never ctxgate-usage.sqlite in the checkout
      `ledger: { path: '${join(dir, `${name}.sqlite`)}' }\n` +
      `models:\n  - name: ${model}\n    tokenizer: qwen3\n    policy: ctxgate\n    workers:\n${workerRows}\n`,
  );
  const proc = spawn(process.execPath, [BIN, 'serve', '--config', cfg], { stdio: ['ignore', 'pipe', 'pipe'] });
  const exit = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  let out = '';
  proc.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    proc.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /"url":"(http:[^"]+)"/.exec(out);
      if (m) resolve(m[1]);
    });
    proc.once('exit', (code) => reject(new Error(`serve exited early (${code}): ${out}`)));
  });
  return { url, proc, exit };
}

const client = (r: Replica, session?: string) =>
  new OpenAI({
    baseURL: `${r.url}/v1`,
    apiKey: 'none',
    maxRetries: 0,
    timeout: 60_000,
    ...(session ? { defaultHeaders: { 'x-session-id': session } } : {}),
  });

/** Each replica's Redis link is up once a session call through it reached the shared log (a batch
 *  flushed while the link is down is dropped, so an entry naming the probe proves the link). */
async function linkUp(r: Replica): Promise<void> {
  const end = Date.now() + 90_000;
  for (let n = 0; ; n++) {
    const probe = `probe-${randomUUID()}`;
    await client(r, probe).chat.completions.create({
      model,
      max_tokens: 2,
      messages: [{ role: 'user', content: `probe ${n}` }],
    });
    for (let k = 0; k < 20; k++) {
      const log = await redis!.xrange(`ctxgate:${model}:log`, '-', '+');
      if (log.some(([, fields]) => fields.some((f) => f.includes(probe)))) return;
      await new Promise((res) => setTimeout(res, 100));
    }
    if (Date.now() > end) throw new Error(`replica ${r.url} never reached the shared log in Redis`);
  }
}

/** The replica's counted Redis failures of the shared index and session homes (all operations). */
async function redisErrors(r: Replica): Promise<number> {
  const text = await (await fetch(`${r.url}/metrics`)).text();
  let sum = 0;
  for (const m of text.matchAll(/^ctxgate_shared_index_errors_total\{[^}]*\} (\d+)/gm)) sum += Number(m[1]);
  return sum;
}

/** Requests the replica has in flight on the workers, all together. */
async function inFlight(r: Replica): Promise<number> {
  const text = await (await fetch(`${r.url}/metrics`)).text();
  let sum = 0;
  for (const m of text.matchAll(/^ctxgate_worker_in_flight\{[^}]*\} (\d+)/gm)) sum += Number(m[1]);
  return sum;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'replicas-procs-'));
  redis = new Redis(redisUrl, { lazyConnect: false, maxRetriesPerRequest: 1 });
  workers = await Promise.all(
    [0, 1, 2, 3].map((i) => startSimWorker({ port: 0, model, tokenizer: 'qwen3', timeScale: 0, seed: i })),
  );
  replicas = await Promise.all([serve('a'), serve('b')]);
  for (const r of replicas) await linkUp(r);
}, 180_000);

afterAll(async () => {
  for (const r of replicas) r.proc.kill('SIGTERM');
  await Promise.all(
    replicas.map((r) =>
      Promise.race([r.exit, new Promise((res) => setTimeout(res, 20_000))]).then(() => {
        if (r.proc.exitCode === null && r.proc.signalCode === null) r.proc.kill('SIGKILL');
      }),
    ),
  );
  await Promise.all(workers.map((w) => w.close()));
  redis?.disconnect();
  if (dir) rmSync(dir, { recursive: true, force: true });
}, 60_000);

/** One agent-like session: a growing conversation, call i sent through via(i). */
const session = (via: (i: number) => Replica): Promise<SessionRun> => agentSession((i) => via(i).url, model, CALLS);

describe('replicas agree on a session’s home: two gateway processes, one redis-server', () => {
  it('has a real Redis', () => {
    expect(redisUrl).toMatch(/^redis:\/\//);
  });

  it('calls alternating between the two processes back to back: one home, one gateway’s hit rate', async () => {
    // the processes differ in what they have seen (one call without a session on the first), so
    // left alone each would place a new session on a different worker
    await client(replicas[0]).chat.completions.create({
      model,
      max_tokens: 4,
      messages: [{ role: 'user', content: 'warm-up without a session' }],
    });
    // and the second has calls in flight (answers held by the workers past the test's end) that the first does
    // not see: left to its own view it would place the session away from them
    // (the hang is decided when a worker takes the request, so the fault is lifted once they are
    // held there: later calls are answered at once; a call that reached its worker only after the
    // lift is answered, and the round is repeated)
    const held: Array<Promise<unknown>> = [];
    const sleep = (ms: number) => new Promise((res) => setTimeout(res, ms));
    while ((await inFlight(replicas[1])) < HELD) {
      for (const w of workers) w.setFault({ hangMs: 120_000 });
      const start = held.length;
      for (let k = 0; k < HELD; k++)
        held.push(
          client(replicas[1])
            .chat.completions.create({
              model,
              max_tokens: 2,
              messages: [{ role: 'user', content: `held call ${start + k} ${randomUUID()}` }],
            })
            .catch(() => undefined),
        );
      await until(async () => (await inFlight(replicas[1])) >= HELD, 60_000);
      await sleep(300);
      for (const w of workers) w.setFault({ hangMs: 0 });
      await sleep(300);
    }
    const heldNow = await inFlight(replicas[1]);
    const before = (await Promise.all(replicas.map(redisErrors))).reduce((a, b) => a + b, 0);
    const two = await session((i) => replicas[i % 2]);
    const errors = (await Promise.all(replicas.map(redisErrors))).reduce((a, b) => a + b, 0) - before;
    expect(await inFlight(replicas[1])).toBe(heldNow); // still held while the session ran
    void held; // cut when the replicas shut down
    for (const w of workers) w.flushCache();
    const one = await session(() => replicas[0]);
    expect(one.flips).toBe(0);
    // a flip only where a replica counted a Redis failure (it then routed on its own view)
    expect(two.flips).toBeLessThanOrEqual(errors);
    // say which branch ran, so a CI log shows whether the strict checks below were reached
    if (errors > 0)
      console.warn(`replicas-agree: ${errors} Redis errors counted, ${two.flips} flips: strict checks skipped`);
    if (errors === 0) {
      expect(two.flips).toBe(0);
      expect(two.homes.size).toBe(1);
      expect(two.hitRate).toBeGreaterThan(0.8);
      expect(two.hitRate).toBeCloseTo(one.hitRate, 3);
    }
  }, 300_000);
});
