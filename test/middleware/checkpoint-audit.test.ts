import { describe, expect, it } from 'vitest';
import {
  auditCheckpoint,
  checkpointJson,
  makeCheckpoint,
  renderCheckpoint,
} from '../../middleware/compaction/checkpoint.ts';
import { compactMessages } from '../../middleware/compaction/compact.ts';
import { findCall, withCalls } from '../../middleware/ledger/call-log.ts';
import { applyLedger, DEFAULT_MAX_CALL_RECORDS } from '../../middleware/ledger/ledger.ts';
import type { CallRecord } from '../../middleware/ledger/types.ts';
import { MemoryArtifactStore } from '../../middleware/artifacts/store.ts';
import { sha256Hex } from '../../middleware/canonical-json.ts';
import { buildSession, codeLines } from './helpers/session-gen.ts';

const base = () =>
  makeCheckpoint({
    n: 1,
    goal: 'Fix the bug',
    goalHash: sha256Hex('Fix the bug'),
    milestones: [{ id: 'call_1', call: 1, command: 'pytest', exit: 1, hash: 'h1' }],
    hypothesis: 'x',
    constraints: ['Do not modify tests.'],
    artifacts: {},
    calls: [1, 3],
  });

describe('checkpoint audit', () => {
  const calls: Record<string, [number, number | null, string]> = { call_1: [1, 1, 'h1'] };
  it('accepts a faithful checkpoint, canonical JSON is key-order independent', async () => {
    const cp = base();
    expect((await auditCheckpoint(cp, { calls, taskConstraints: ['Do not modify tests.'] })).ok).toBe(true);
    expect(checkpointJson(cp)).toBe(checkpointJson(Object.fromEntries(Object.entries(cp).reverse()) as typeof cp));
    expect(renderCheckpoint(cp)).toContain('- Do not modify tests.');
  });
  it('rejects a fabricated milestone (unknown call or wrong exit code)', async () => {
    const cp = base();
    cp.milestones.push({ id: 'call_9', call: 9, command: 'pytest', exit: 0, hash: 'h9' });
    const a = await auditCheckpoint(cp, { calls, taskConstraints: [] });
    expect(a.ok).toBe(false);
    expect(a.problems[0]).toMatch(/call_9.*not in the ledger/);
    const cp2 = base();
    cp2.milestones[0].exit = 0;
    expect((await auditCheckpoint(cp2, { calls, taskConstraints: [] })).problems[0]).toMatch(
      /claims exit 0, ledger has 1/,
    );
  });
  it('rejects a dropped constraint', async () => {
    const a = await auditCheckpoint(base(), {
      calls,
      taskConstraints: ['Do not modify tests.', 'Never push to main.'],
    });
    expect(a.problems).toEqual(['constraint dropped: Never push to main.']);
  });
  it('rejects a changed or missing artifact', async () => {
    const store = new MemoryArtifactStore();
    const h = await store.put('t', 'full output');
    const cp = base();
    cp.artifacts = { 'call:call_1': h, 'call:call_2': 'f'.repeat(64) };
    const a = await auditCheckpoint(cp, {
      calls,
      taskConstraints: [],
      resolve: async (x) => (x === h ? 'tampered output' : undefined),
    });
    expect(a.problems).toHaveLength(2);
    expect(a.problems[0]).toMatch(/no longer hashes/);
    expect(a.problems[1]).toMatch(/missing/);
  });
  it('a compaction whose audit fails is refused and changes nothing', async () => {
    const msgs = buildSession(
      'Fix. Do not modify tests.',
      Array.from({ length: 12 }, (_, k) => ({
        cmd: `python -m pytest -k t${k}`,
        out: codeLines(`t${k}`, 40),
        exit: 1,
      })),
    );
    const led = applyLedger(msgs, undefined, { eviction: false }).state;
    const r = await compactMessages(msgs, undefined, { budgetTokens: 2500, ledger: led });
    // an artifact store that no longer returns what was stored makes the audit fail
    const lying = { put: async (c: string) => sha256Hex(c), get: async () => 'not the same' };
    const r2 = await compactMessages(msgs, undefined, { budgetTokens: 2500, artifacts: lying });
    expect(r2.receipts.map((x) => x.action)).toEqual(['refused']);
    expect(r2.receipts[0].reason).toMatch(/checkpoint audit failed: artifact/);
    expect(r2.messages).toBe(msgs);
    expect(r.receipts.some((x) => x.action === 'compacted')).toBe(true);
  });
  it('milestones whose ledger records the record bound dropped since are dropped, not a refusal for ever', async () => {
    const steps = (from: number, n: number) =>
      Array.from({ length: n }, (_, k) => ({
        cmd: `python -m pytest -k t${from + k}`,
        out: codeLines(`t${from + k}`, 40),
        exit: 1,
      }));
    const msgs = buildSession('Fix. Do not modify tests.', steps(0, 12));
    const led = applyLedger(msgs, undefined, { eviction: false }).state;
    const r = await compactMessages(msgs, undefined, { budgetTokens: 2500, ledger: led });
    expect(r.receipts.some((x) => x.action === 'compacted')).toBe(true);
    const carried = r.state!.checkpoint!.milestones;
    expect(carried.length).toBeGreaterThan(0);
    // The session goes on past the record bound: its first calls' records are gone (oldest first).
    const more = buildSession('Fix. Do not modify tests.', [...steps(0, 12), ...steps(12, 12)]);
    const led2 = applyLedger(more, led, { eviction: false }).state;
    const filler: CallRecord[] = Array.from({ length: DEFAULT_MAX_CALL_RECORDS }, (_, i) => [`x${i}`, 100 + i, 0, 'h']);
    const own = led2.calls.flat();
    const trimmed = withCalls([], [...own.slice(0, 6), ...filler, ...own.slice(6)], DEFAULT_MAX_CALL_RECORDS).calls;
    const ledgerPast = { ...led2, calls: trimmed };
    const gone = carried.filter((m) => !findCall(trimmed, m.id));
    expect(gone.length).toBeGreaterThan(0);
    const r2 = await compactMessages(more, r.state, { budgetTokens: 2500, ledger: ledgerPast });
    expect(r2.receipts.map((x) => x.reason).join('; ')).not.toMatch(/not in the ledger/);
    expect(r2.receipts.some((x) => x.action === 'compacted')).toBe(true);
    const now = r2.state!.checkpoint!.milestones.map((m) => m.id);
    for (const m of gone) expect(now).not.toContain(m.id);
    // A milestone the ledger should still hold but does not is still a refusal (a forged one).
    const forged = {
      ...r.state!,
      checkpoint: { ...r.state!.checkpoint!, milestones: [{ ...carried[0], id: 'call_forged', call: 10_000 }] },
    };
    const r3 = await compactMessages(more, forged, { budgetTokens: 2500, ledger: ledgerPast });
    expect(r3.receipts.map((x) => x.reason).join('; ')).toMatch(/not in the ledger/);
  });
});
