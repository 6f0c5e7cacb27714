// Rolling upgrades with a shared session store: replicas of the release before LEDGER_SLOT v2 read
// only v1 ledger parts, so a new replica must be able to write v1 until they are gone
// (`session_state.ledger_write_version: 1`), then flip to 2. The fixture is what the v1 tree (main
// d9f82c0) stored after call K and sent on the calls after K. A gateway writing v1 must store the
// very part that tree stored (so an old replica reading it continues as that tree did: the
// fixture's later bodies), in a memory store and in a real redis-server; flipping to 2 (and back
// to 1, a rollback) keeps every tombstone and the exact prompt; the invalidate route writes the
// configured version too; the config key defaults to 2 and rejects anything but 1 or 2.
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { chainSpecOf } from '../../gateway/assemble.ts';
import { ConfigError, parseConfig } from '../../gateway/config/load.ts';
import { DEFAULT_LEDGER_WRITE_VERSION, type LedgerWriteVersion, readLedger } from '../../middleware/ledger/slot.ts';
import { LEDGER_SLOT, LEDGER_SLOT_V1, type LedgerStateV1 } from '../../middleware/ledger/types.ts';
import { createPipeline } from '../../middleware/pipeline.ts';
import { registerInvalidateRoutes } from '../../middleware/routes/invalidate.ts';
import { readSlot } from '../../middleware/session/stage-state.ts';
import type { SessionStore } from '../../middleware/session/store.ts';
import type { Receipt } from '../../middleware/types.ts';
import { ctx, fixture, request, sessionStores, v1Part } from '../helpers/ledger-v1-fixture.ts';

const pipeline = (store: SessionStore, ledgerWriteVersion?: LedgerWriteVersion) =>
  createPipeline({ model: 'm', tokenizer: 'qwen3', store, ledgerWriteVersion });
/** Observation times are the clock's when first seen: the fixture's run had its own. */
const timesAsFixture = (p: LedgerStateV1): LedgerStateV1 => ({
  ...p,
  observations: p.observations.map((o, i) => ({ ...o, at: v1Part.observations[i]?.at ?? o.at })),
});

const storeOf = sessionStores();
// Its own tenant per run: the shared redis-server may hold an earlier run's session.
let runs = 0;
const freshTenant = () => `ledger-wv-${process.pid}-${Date.now()}-${runs++}`;

async function callsAfterK(store: SessionStore, tenant: string, version?: LedgerWriteVersion) {
  const p = pipeline(store, version);
  const out: { body: unknown; receipts: Receipt[] }[] = [];
  for (const n of fixture.next) {
    const r = await p.process(request(n.call), ctx(n.call, tenant));
    out.push({ body: JSON.parse(JSON.stringify(r.body)), receipts: r.receipts });
  }
  return out;
}
const fixtureNext = fixture.next.map(({ body, receipts }) => ({ body, receipts }));

describe('session_state.ledger_write_version: the ledger part a gateway writes', () => {
  for (const kind of ['memory', 'redis'] as const) {
    it(`writing 1 (${kind} store) stores the part the v1 tree stored, which old-format readers read`, async () => {
      const store = storeOf(kind);
      const tenant = freshTenant();
      const p = pipeline(store, 1);
      for (let k = 1; k <= fixture.K; k++) await p.process(request(k), ctx(k, tenant));
      const after = (await store.get(tenant, 'sess-v1'))!;
      // What a release that reads only v1 looks for: the `ledger` key tagged 1, the v1 shape.
      expect(after.stages?.ledger.v).toBe(1);
      expect(readSlot(after, LEDGER_SLOT)).toBeUndefined();
      const part = readSlot(after, LEDGER_SLOT_V1)!;
      expect(timesAsFixture(part)).toEqual(v1Part);
      // The memory store keeps key order: the same JSON as the v1 tree's, byte for byte.
      if (kind === 'memory') expect(JSON.stringify(timesAsFixture(part))).toBe(JSON.stringify(v1Part));
      // Later calls still write v1 and send what the v1 tree sent.
      expect(await callsAfterK(store, tenant, 1)).toEqual(fixtureNext);
      const last = (await store.get(tenant, 'sess-v1'))!;
      expect(last.stages?.ledger.v).toBe(1);
      const lastPart = readSlot(last, LEDGER_SLOT_V1)!;
      expect(lastPart.tombstones.slice(0, v1Part.tombstones.length)).toEqual(v1Part.tombstones);
      // A v1 record read back from Redis has its keys sorted (the v1 tree's did too): order only in memory.
      const ids = Object.keys(lastPart.calls);
      const all = callIds(fixture.next.at(-1)!.call);
      if (kind === 'memory') expect(ids).toEqual(all);
      else expect(ids.sort()).toEqual(all.sort());
    });
  }

  it('flipping 1 → 2 mid-session (the upgrade done) and 2 → 1 (a rollback) keep the exact prompt', async () => {
    for (const [first, then] of [
      [1, 2],
      [2, 1],
    ] as const) {
      const store = storeOf('redis');
      const tenant = freshTenant();
      const p = pipeline(store, first);
      for (let k = 1; k <= fixture.K; k++) await p.process(request(k), ctx(k, tenant));
      expect((await store.get(tenant, 'sess-v1'))!.stages?.ledger.v).toBe(first);
      expect(await callsAfterK(store, tenant, then), `${first} → ${then}`).toEqual(fixtureNext);
      const after = (await store.get(tenant, 'sess-v1'))!;
      expect(after.stages?.ledger.v).toBe(then);
      const part = readLedger(after)!;
      expect(part.tombstones.slice(0, v1Part.tombstones.length)).toEqual(v1Part.tombstones);
      // Every call's record (Redis returns a v1 record's keys sorted: compare as sets).
      expect(
        part.calls
          .flat()
          .map((r) => r[0])
          .sort(),
      ).toEqual(callIds(fixture.next.at(-1)!.call).sort());
    }
  });

  it('the invalidate route writes the configured version', async () => {
    for (const version of [1, 2] as const) {
      const store = storeOf('memory');
      const tenant = 'tenant-a';
      const p = pipeline(store, version);
      for (let k = 1; k <= fixture.K; k++) await p.process(request(k), ctx(k, tenant));
      const app = Fastify();
      await registerInvalidateRoutes(app, { store, authTenant: () => tenant, ledgerWriteVersion: version });
      const base = await app.listen({ port: 0, host: '127.0.0.1' });
      try {
        const res = await fetch(`${base}/v1/gateway/sessions/sess-v1/invalidate`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ uri: 'src/f_1.py' }),
        });
        expect(res.status).toBe(202);
      } finally {
        await app.close();
      }
      const st = (await store.get(tenant, 'sess-v1'))!;
      expect(st.stages?.ledger.v).toBe(version);
      expect(readLedger(st)!.pending.map((x) => x.uri)).toEqual(['file://src/f_1.py']);
    }
  });

  it('config: defaults to 2, takes 1, rejects anything else naming the key; the chain carries it', () => {
    const model = { name: 'm', tokenizer: 'qwen3', workers: [{ url: 'http://127.0.0.1:9001' }] };
    const dflt = parseConfig({ models: [model] });
    expect(DEFAULT_LEDGER_WRITE_VERSION).toBe(2);
    expect(dflt.session_state.ledger_write_version).toBe(2);
    expect(chainSpecOf(dflt.models[0], dflt).ledgerWriteVersion).toBe(2);
    const one = parseConfig({ models: [model], session_state: { ledger_write_version: 1 } });
    expect(chainSpecOf(one.models[0], one).ledgerWriteVersion).toBe(1);
    const chain = createPipeline({ ...chainSpecOf(one.models[0], one), model: 'm', tokenizer: 'qwen3' }).chain;
    expect(chain.stages.find((s) => s.name === 'ledger')?.settings).toMatchObject({ writeVersion: 1 });
    for (const bad of [3, 0, '2', null]) {
      let err: unknown;
      try {
        parseConfig({ models: [model], session_state: { ledger_write_version: bad } }, 'cfg.yaml', {});
      } catch (e) {
        err = e;
      }
      expect(err, String(bad)).toBeInstanceOf(ConfigError);
      expect((err as Error).message).toContain('ledger_write_version');
    }
  });
});

/** Tool call ids of calls 1..n, in order. */
function callIds(n: number): string[] {
  return Array.from({ length: n }, (_, i) => `call_${i + 1}`);
}
