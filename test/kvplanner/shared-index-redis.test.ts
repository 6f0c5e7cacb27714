import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { blockHashes } from '../../kvplanner/block-hash.ts';
import { CtxgatePolicy } from '../../kvplanner/policies/ctxgate.ts';
import { createPolicy } from '../../kvplanner/policy-registry.ts';
import { SharedIndexRedis, shareIndex } from '../../kvplanner/shared-index-redis.ts';
import type { Choice, RouteInfo, WorkerView } from '../../kvplanner/types.ts';
import { info, tokens, workers } from './fixtures.ts';
import { until } from '../helpers/until.ts';

/** select, then report the call done (what the gateway does after the response) */
function route(p: CtxgatePolicy, ws: WorkerView[], req: RouteInfo): Choice {
  const c = p.select(ws, req)!;
  p.observe({ workerId: c.worker.id, info: req, ok: true });
  return c;
}

const redisUrl = inject('redisUrl');
const open: SharedIndexRedis[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.stop()));
});

function call(session: number, turn: number, sessionId = true) {
  const ids = tokens(256, session, 64 + turn * 128);
  return info({
    sessionId: sessionId ? `s${session}` : undefined,
    blockHashes: blockHashes(ids, 16),
    promptTokens: ids.length,
  });
}

/** A live Redis's command timeout here: the default (100 ms) is for the request path, and one
 * command a loaded machine delays past it marks the index degraded, which these tests check is not. */
const LIVE_TIMEOUT_MS = 5_000;

const ready = (s: SharedIndexRedis): Promise<void> => until(() => s.ready);

describe('Redis-shared index', () => {
  it('has a real Redis', () => {
    expect(redisUrl).toMatch(/^redis:\/\//);
  });

  it('a second replica sees the first one’s session pins and cached blocks', async () => {
    const model = `m-${randomUUID()}`;
    const a = new CtxgatePolicy();
    const b = new CtxgatePolicy();
    const sa = new SharedIndexRedis(a, { redisUrl, model, replicaId: 'A', commandTimeoutMs: LIVE_TIMEOUT_MS });
    const sb = new SharedIndexRedis(b, { redisUrl, model, replicaId: 'B', commandTimeoutMs: LIVE_TIMEOUT_MS });
    open.push(sa, sb);
    await Promise.all([ready(sa), ready(sb)]);
    const ws = workers(4);
    // pin three sessions on A so the one we check is not simply B's first choice
    const homes = [0, 1, 2].map((s) => route(a, ws, call(s, 0)).worker.id);
    await sa.flush();
    expect(await sb.pull()).toBeGreaterThan(0);
    const c = route(b, ws, call(2, 1));
    expect(c.branch).toBe('sticky');
    expect(c.worker.id).toBe(homes[2]);
    expect(c.predictedCachedTokens).toBe(256 + 64);
    // without a session id, B follows A's cached conversation by prefix
    route(a, ws, call(9, 0, false));
    const home9 = route(a, ws, call(9, 1, false)).worker.id;
    await sa.flush();
    await sb.pull();
    expect(route(b, ws, call(9, 2, false)).worker.id).toBe(home9);
    expect(sa.degraded || sb.degraded).toBe(false);
  });

  it('stop() publishes a long chain whose index work was still queued in steps', async () => {
    const model = `m-${randomUUID()}`;
    const a = new CtxgatePolicy({ index_stride: 1 });
    const b = new CtxgatePolicy({ index_stride: 1 });
    const sa = new SharedIndexRedis(a, { redisUrl, model, replicaId: 'A', commandTimeoutMs: LIVE_TIMEOUT_MS });
    const sb = new SharedIndexRedis(b, { redisUrl, model, replicaId: 'B', commandTimeoutMs: LIVE_TIMEOUT_MS });
    open.push(sa, sb);
    await Promise.all([ready(sa), ready(sb)]);
    const ws = workers(2);
    const hashes = Array.from({ length: 3_000 }, (_, i) => `${model}-b${i}`);
    const steps: Array<() => boolean> = [];
    // a caller whose stepper never got its turn (the gateway stopping): the chain waits in steps
    const c = a.select(
      ws,
      info({ sessionId: 'long', blockHashes: hashes, promptTokens: 48_000, defer: (s) => steps.push(s) }),
    )!;
    expect(steps).toHaveLength(1);
    expect(a.index.has(c.worker.id, hashes[0])).toBe(false);
    await sa.stop();
    await sb.pull();
    expect(b.index.matchLength(c.worker.id, hashes)).toBe(hashes.length);
  });

  it('a replica that missed the log adopts a pin on its first miss', async () => {
    const model = `m-${randomUUID()}`;
    const a = new CtxgatePolicy();
    const sa = new SharedIndexRedis(a, { redisUrl, model, replicaId: 'A', commandTimeoutMs: LIVE_TIMEOUT_MS });
    open.push(sa);
    await ready(sa);
    const ws = workers(4);
    for (let s = 0; s < 4; s++) route(a, ws, call(s, 0));
    const home3 = route(a, ws, call(3, 1)).worker.id;
    await sa.flush();
    const b = new CtxgatePolicy();
    const sb = new SharedIndexRedis(b, { redisUrl, model, replicaId: 'B', commandTimeoutMs: LIVE_TIMEOUT_MS });
    open.push(sb);
    await ready(sb);
    route(b, ws, call(3, 2)); // a miss: noted, looked up on the sync's next round
    await sb.fetchMisses();
    expect(route(b, ws, call(3, 3)).worker.id).toBe(home3);
  });

  it('Redis down: select keeps working and nothing throws', async () => {
    const errors: Error[] = [];
    const p = new CtxgatePolicy();
    // port 1: nothing listens there (a port picked free and closed could be taken by then)
    const s = shareIndex(p, { redisUrl: 'redis://127.0.0.1:1', model: 'm', onError: (e) => errors.push(e) })!;
    open.push(s);
    const ws = workers(2);
    const first = route(p, ws, call(0, 0));
    // the refused connection has been seen before the next call is routed
    await until(() => errors.length > 0);
    const c = route(p, ws, call(0, 1));
    expect(c.branch).toBe('sticky');
    expect(c.worker.id).toBe(first.worker.id);
    await expect(s.flush()).resolves.toBeUndefined();
    await expect(s.pull()).resolves.toBe(0);
    await expect(s.fetchSession('x')).resolves.toBeUndefined();
    await expect(s.fetchMisses()).resolves.toBeUndefined();
    expect(s.degraded).toBe(true);
    expect(errors.length).toBeGreaterThan(0);
    expect(shareIndex(p, { model: 'm' })).toBeUndefined();
    expect(shareIndex(createPolicy('round_robin'), { redisUrl, model: 'm' })).toBeUndefined();
  });
});
