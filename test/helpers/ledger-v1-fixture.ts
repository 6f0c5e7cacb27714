// The v1 ledger fixture (test/fixtures/ledger-v1-session.json: a session run by the tree before
// LEDGER_SLOT v2, its stored state after call K and what it sent on the calls after K) and the
// memory / real-redis session stores the ledger-format tests run it on.
import { readFileSync } from 'node:fs';
import { afterAll, expect, inject } from 'vitest';
import { LEDGER_SLOT_V1, type LedgerStateV1 } from '../../middleware/ledger/types.ts';
import { MemorySessionStore } from '../../middleware/session/memory-store.ts';
import { RedisSessionStore } from '../../middleware/session/redis-store.ts';
import { readSlot } from '../../middleware/session/stage-state.ts';
import type { SessionState, SessionStore } from '../../middleware/session/store.ts';
import type { ChatMessage, Receipt } from '../../middleware/types.ts';

export interface LedgerV1Fixture {
  K: number;
  messages: ChatMessage[];
  stateAfterK: SessionState;
  next: { call: number; body: unknown; receipts: Receipt[] }[];
}

export const fixture = JSON.parse(
  readFileSync(new URL('../fixtures/ledger-v1-session.json', import.meta.url), 'utf8'),
) as LedgerV1Fixture;

/** The fixture session's request of call k (its first 2 + 2k messages). */
export const request = (k: number) => ({ model: 'm', messages: fixture.messages.slice(0, 2 + 2 * k), max_tokens: 16 });

/** The pipeline context of call k for a tenant (the fixture's session id). */
export const ctx = (k: number, tenant = 't') => ({
  tenant,
  requestId: `r${k}`,
  headers: { 'x-session-id': 'sess-v1' },
  model: 'm',
});

/** The v1 ledger part the old tree stored after call K. */
export const v1Part = readSlot(fixture.stateAfterK, LEDGER_SLOT_V1) as LedgerStateV1;

/**
 * A store factory for the calling test file: `memory`, or a real redis-server
 * (test/global-setup.ts) with no read cache, so every get decodes what Redis holds. Every store
 * it opens is closed after the file's tests.
 */
export function sessionStores(): (kind: 'memory' | 'redis') => SessionStore {
  const url = inject('redisUrl');
  const opened: SessionStore[] = [];
  afterAll(async () => {
    for (const s of opened) await s.close();
  });
  return (kind) => {
    let store: SessionStore;
    if (kind === 'memory') store = new MemorySessionStore();
    else {
      expect(url, 'redis-server must be running (test/global-setup.ts)').toMatch(/^redis:\/\//);
      store = new RedisSessionStore({ url, commandTimeoutMs: 5000, readCacheBytes: 0 });
    }
    opened.push(store);
    return store;
  };
}
