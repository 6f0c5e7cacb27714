// Routing feedback per attempt, over real sockets: two reference workers behind the gateway, the
// first one tried resets the connection, the request is failed over to the other. The failed
// attempt must reach the policy at once (taken back from that worker: its index entry for the
// prompt, the active blocks counted as its load), and the request record lists both attempts.
import OpenAI from 'openai';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../gateway/config/load.ts';
import type { AttemptRecord } from '../../gateway/request-records.ts';
import { startGateway, type StartedGateway } from '../../gateway/server.ts';
import type { CtxgatePolicy } from '../../kvplanner/policies/ctxgate.ts';
import type { DynamoKvPolicy } from '../../kvplanner/policies/dynamo-kv.ts';
import { startSimWorker, type SimWorker } from '../../loadtest/sim-worker/index.ts';
import { requestRecord } from '../helpers/request-record.ts';

let sims: Record<string, SimWorker> = {};
let gw: StartedGateway;

beforeAll(async () => {
  const [a, b] = await Promise.all([
    startSimWorker({ model: 'm', seed: 1, timeScale: 0 }),
    startSimWorker({ model: 'm', seed: 2, timeScale: 0 }),
  ]);
  sims = { a, b };
  const workers = [
    { url: a.url, id: 'a' },
    { url: b.url, id: 'b' },
  ];
  const config = parseConfig({
    listen: { host: '127.0.0.1', port: 0 },
    // a reset must not eject the worker: the test reads what the policy learnt, not the health
    health: { interval_ms: 0, eject_after: 100 },
    upstream: { attempts: 2 },
    models: [
      { name: 'm', upstream_model: 'm', layout: 'passthrough', policy: 'ctxgate', workers },
      { name: 'd', upstream_model: 'm', layout: 'passthrough', policy: 'dynamo_kv', workers },
    ],
  });
  gw = await startGateway(config, { logger: false });
});
afterAll(async () => {
  await gw?.close();
  await Promise.all(Object.values(sims).map((w) => w.close()));
});
afterEach(() => {
  for (const w of Object.values(sims)) w.setFault({ reset: false });
});

interface Rec {
  worker: string;
  attempts: number;
  attemptLog: AttemptRecord[];
}

/** The request record, written right after the response (polled with generous slack). */
async function record(id: string): Promise<Rec> {
  return requestRecord<Rec>(gw.url, id, 50);
}

async function ask(model: string, session: string, text: string): Promise<{ worker: string; rec: Rec }> {
  const client = new OpenAI({
    baseURL: `${gw.url}/v1`,
    apiKey: 'none',
    maxRetries: 0,
    defaultHeaders: { 'x-session-id': session },
  });
  const { response } = await client.chat.completions
    .create({ model, max_tokens: 4, messages: [{ role: 'user', content: text }] })
    .withResponse();
  return {
    worker: response.headers.get('x-ctxgate-worker')!,
    rec: await record(response.headers.get('x-request-id')!),
  };
}

const policyOf = <P>(model: string): P => gw.ctx.fleet.get(model)!.policy as unknown as P;
const handbook = 'Read the repository rules before you change anything, then explain each change. '.repeat(30);

describe('routing feedback per attempt', () => {
  it('a failed attempt is taken back from its worker before the failover, and the record lists both', async () => {
    const policy = policyOf<CtxgatePolicy>('m');
    const first = await ask('m', 's1', `${handbook}\nTask one.`);
    const home = first.worker;
    const other = home === 'a' ? 'b' : 'a';
    expect(first.rec.attemptLog.map((x) => `${x.worker}:${x.outcome}`)).toEqual([`${home}:ok`]);
    const homeBlocks = policy.index.size(home);
    expect(homeBlocks).toBeGreaterThan(0);
    expect(policy.index.size(other)).toBe(0);

    // the session's next call goes home (sticky), which now resets the connection
    sims[home].setFault({ reset: true });
    const longer = `${handbook}\nTask one.\n${'Now also list every file you touched and why. '.repeat(20)}`;
    const second = await ask('m', 's1', longer);
    expect(second.worker).toBe(other);
    const log = second.rec.attemptLog;
    expect(log.map((x) => `${x.worker}:${x.outcome}`)).toEqual([`${home}:error`, `${other}:ok`]);
    expect(log[0].branch).toBe('sticky');
    expect(log[0].status).toBe(0);
    expect(log[0].detail).toMatch(/before the headers/);
    expect(log[0].headersMs).toBeUndefined();
    expect(log[0].endMs).toBeGreaterThanOrEqual(0);
    expect(log[1].status).toBe(200);
    expect(log[1].startMs).toBeGreaterThanOrEqual(log[0].startMs);
    expect(log[1].headersMs).toBeGreaterThanOrEqual(0);
    expect(log[1].firstByteMs).toBeGreaterThanOrEqual(log[1].headersMs!);
    expect(log[1].endMs).toBeGreaterThanOrEqual(log[1].firstByteMs!);
    expect(second.rec.attempts).toBe(2);
    // select() had recorded the longer chain on the home; the failure took it back, so the home
    // holds what the first call left there and no more. The worker that answered holds it all.
    expect(policy.index.size(home)).toBe(homeBlocks);
    expect(policy.index.size(other)).toBeGreaterThan(homeBlocks);
    for (const w of gw.ctx.fleet.get('m')!.workers) {
      expect(w.inFlight).toBe(0);
      expect(w.queuedPrefillTokens).toBe(0);
    }
  });

  it("a failed attempt's active blocks leave that worker's load (dynamo_kv)", async () => {
    const policy = policyOf<DynamoKvPolicy>('d');
    sims.a.setFault({ reset: true });
    // prompts sharing no prefix: dynamo_kv breaks the tie by the smaller index footprint, so within
    // two calls one is routed to a first
    const logs: string[][] = [];
    for (let i = 0; i < 3; i++) {
      const r = await ask('d', `d${i}`, `Question ${i}.\n${handbook}`);
      expect(r.worker).toBe('b');
      logs.push(r.rec.attemptLog.map((x) => `${x.worker}:${x.outcome}`));
    }
    expect(logs).toContainEqual(['a:error', 'b:ok']);
    const s = policy.stats();
    expect(s.pending).toBe(0);
    expect(s.activeBlocks.a ?? 0).toBe(0);
    expect(s.activeBlocks.b ?? 0).toBe(0);
  });
});
