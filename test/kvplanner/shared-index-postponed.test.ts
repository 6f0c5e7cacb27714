// A pick's prefix-index insert left for its send (deferred-work.ts postpone) and done by the
// Redis-shared index's apply() of another replica's batch (the policy's index getter) must still
// reach the other replicas: inside `applying` its event was taken for the other replica's.
import { randomUUID } from 'node:crypto';
import { afterEach, expect, inject, it } from 'vitest';
import { blockHashes } from '../../kvplanner/block-hash.ts';
import { CtxgatePolicy } from '../../kvplanner/policies/ctxgate.ts';
import { SharedIndexRedis } from '../../kvplanner/shared-index-redis.ts';
import { info, tokens, workers } from './fixtures.ts';
import { until } from '../helpers/until.ts';

const redisUrl = inject('redisUrl');
const open: SharedIndexRedis[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.stop()));
});
const call = (session: number, turn: number) => {
  const ids = tokens(256, session, 64 + turn * 128);
  return info({ blockHashes: blockHashes(ids, 16), promptTokens: ids.length });
};

for (const postponed of [false, true])
  it(`replica B learns replica A's pick (A's insert ${postponed ? 'postponed, settled by apply()' : 'at select()'})`, async () => {
    const model = `m-${randomUUID()}`;
    const a = new CtxgatePolicy();
    const b = new CtxgatePolicy();
    const o = { redisUrl, model, commandTimeoutMs: 5_000 };
    const sa = new SharedIndexRedis(a, { ...o, replicaId: 'A' });
    const sb = new SharedIndexRedis(b, { ...o, replicaId: 'B' });
    open.push(sa, sb);
    await until(() => sa.ready && sb.ready);
    const ws = workers(3);
    // B routes something of its own and publishes it: A has a batch to apply
    b.select(ws, call(7, 0));
    await sb.flush();
    // A picks a worker for a conversation; the gateway's send gate has not run yet
    const gate: Array<() => void> = [];
    const req = call(1, 2);
    const c = a.select(ws, postponed ? { ...req, sent: (run: () => void) => void gate.push(run) } : req)!;
    await sa.pull(); // B's batch arrives first
    for (const run of gate) run(); // then A's body goes upstream
    await sa.flush();
    await sb.pull();
    const indexed = req.blockHashes!.filter((_, i) => i % 4 === 3);
    const inA = a.index.matchLength(c.worker.id, indexed);
    expect(inA).toBe(indexed.length);
    const inB = b.index.matchLength(c.worker.id, indexed);
    expect(inB).toBe(inA);
  });
