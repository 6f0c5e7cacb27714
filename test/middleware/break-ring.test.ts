// The break ring's record and the store's snapshot are built key by key (faster than a spread that
// adds keys); both must be what the spreads built: the same keys in the same order, the same values
// (undefined ones included), so stored states and their JSON are byte-identical.
import { describe, expect, it } from 'vitest';
import { breakRecord, pushBreak, readBreaks } from '../../middleware/diagnostics/break-ring.ts';
import { snapshotOf } from '../../middleware/session/shared-parts.ts';
import { SESSION_SCHEMA_VERSION, type SessionState } from '../../middleware/session/store.ts';
import type { PrefixDiagnostics } from '../../middleware/types.ts';

const same = (a: object, b: object): void => {
  expect(Object.keys(a)).toEqual(Object.keys(b));
  expect(JSON.stringify(a)).toBe(JSON.stringify(b));
  for (const k of Object.keys(b))
    expect((a as Record<string, unknown>)[k]).toStrictEqual((b as Record<string, unknown>)[k]);
};

describe('break records and snapshots built key by key', () => {
  it('a record equals the spread it replaces, for diagnostics of every shape', () => {
    const shapes: PrefixDiagnostics[] = [
      { predicted_cached_tokens: 10, prompt_tokens: 20, break_cause: 'none' },
      { predicted_cached_tokens: 0, prompt_tokens: 5, break_cause: 'new_session', original_cached_tokens: 0 },
      {
        predicted_cached_tokens: 16,
        prompt_tokens: 99,
        break_cause: 'history_edited',
        break_token_index: 17,
        break_message_index: undefined,
        original_cached_tokens: 32,
      },
    ];
    for (const p of shapes) {
      const rec = breakRecord(p, 3, 1700000000000, 'req-1', 12);
      same(rec, { ...p, call: 3, at: 1700000000000, request_id: 'req-1', messages: 12 });
      expect('break_message_index' in rec).toBe('break_message_index' in p);
    }
    // A diagnostics key named like a record key keeps its place and takes the record's value.
    const odd = { predicted_cached_tokens: 1, call: 99, prompt_tokens: 2, break_cause: 'none' } as PrefixDiagnostics;
    same(breakRecord(odd, 4, 5, 'r', 6), { ...odd, call: 4, at: 5, request_id: 'r', messages: 6 });
  });

  it('the ring keeps its last items in order, dropping the oldest', () => {
    const st: SessionState = {
      schema: SESSION_SCHEMA_VERSION,
      tenant: 't',
      sessionId: 's',
      model: 'm',
      calls: 0,
      updatedAt: 0,
    } as SessionState;
    for (let i = 1; i <= 7; i++)
      pushBreak(
        st,
        breakRecord({ predicted_cached_tokens: i, prompt_tokens: i, break_cause: 'none' }, i, i, `r${i}`, i),
        3,
      );
    expect(readBreaks(st).map((r) => r.call)).toEqual([5, 6, 7]);
    expect(Object.isFrozen(readBreaks(st))).toBe(true);
  });

  it('a snapshot has the state keys in order, no checksum, stages last (as the rest/spread gave)', () => {
    const withStages = {
      schema: SESSION_SCHEMA_VERSION,
      stages: { a: { v: 1, s: [1] } },
      tenant: 't',
      checksum: 'c',
      sessionId: 's',
      calls: 2,
      updatedAt: undefined,
    } as unknown as SessionState;
    const { checksum: _c, stages, ...top } = withStages;
    void _c;
    same(snapshotOf({ ...withStages }), { ...top, stages: { ...stages } });
    expect(Object.isFrozen(snapshotOf({ ...withStages }).stages)).toBe(true);
    const without = { schema: SESSION_SCHEMA_VERSION, tenant: 't', sessionId: 's', checksum: 'x' } as SessionState;
    const { checksum: _d, ...rest } = without;
    void _d;
    same(snapshotOf({ ...without }), rest);
    expect(Object.isFrozen(snapshotOf({ ...without }))).toBe(true);
  });
});
