// ctxgate's decisions on a seeded stream (test/helpers/recorded-routing.ts) against the decisions
// recorded from the tree before the routing-cost work of session 39 (main 50e7e2f), with the
// approximate index (every 4th block) and the precise one (engine events, workers out of step):
// a SHA-256 per 250 decisions, so a change names the first stretch it moved, and the decisions
// per branch (the stream reaches every branch). Speed work on select() must keep every decision.
// To record anew (only for a change meant to move decisions, said so in its commit):
// `CTXGATE_RECORD_DECISIONS=1 npx vitest run test/kvplanner/ctxgate-recorded.test.ts` prints the JSON.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { KvEventIndex } from '../../kvplanner/kv-events/event-index.ts';
import { CtxgatePolicy } from '../../kvplanner/policies/ctxgate.ts';
import { branchCounts, type RecordedIndex, recordDecisions } from '../helpers/recorded-routing.ts';

const STRETCH = 250;

interface Recorded {
  digests: string[];
  branches: Record<string, number>;
}

function summary(lines: readonly string[]): Recorded {
  const digests: string[] = [];
  for (let i = 0; i < lines.length; i += STRETCH)
    digests.push(
      createHash('sha256')
        .update(lines.slice(i, i + STRETCH).join('\n'))
        .digest('hex')
        .slice(0, 16),
    );
  return { digests, branches: branchCounts(lines) };
}

const recorded = JSON.parse(
  readFileSync(new URL('../fixtures/ctxgate-recorded-decisions.json', import.meta.url), 'utf8'),
) as Record<RecordedIndex, Recorded>;

describe('ctxgate: the decisions recorded before the routing-cost work', () => {
  it.each(['approx', 'precise'] as const)('%s index: every decision of the seeded stream as recorded', (mode) => {
    const got = summary(recordDecisions({ CtxgatePolicy, KvEventIndex }, mode));
    if (process.env.CTXGATE_RECORD_DECISIONS) console.log(JSON.stringify({ [mode]: got }));
    for (const b of ['sticky', 'new_session', 'overflow', 'migrate', 'prefix_match', 'balance'])
      expect(got.branches[b] ?? 0, b).toBeGreaterThan(20);
    const first = got.digests.findIndex((d, i) => d !== recorded[mode].digests[i]);
    expect(first, `first stretch of ${STRETCH} decisions that differs`).toBe(-1);
    expect(got).toEqual(recorded[mode]);
  });
});
