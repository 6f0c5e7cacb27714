// A state the primary refuses (over its size limit) while the store is marked unhealthy: the primary
// answered, so it is healthy again and what this replica owes it is written back (review s41 F3).
import { afterAll, describe, expect, inject, it } from 'vitest';
import { until } from '../helpers/until.ts';
import { noteState } from '../fixtures/session-state.ts';
import { replicaRig } from '../helpers/store-replica.ts';

const rig = replicaRig(inject('redisUrl'));
const reader = rig.redis();
afterAll(() => rig.close());

describe('resilient store: a refusal while marked unhealthy', () => {
  it('the primary answered (refusing a too-large state): healthy again, and the owed write-back runs', async () => {
    const a = rig.replica(undefined, 4_000);
    a.down = true;
    await a.r.put(noteState('refused-small', 1, 100)); // owed
    a.down = false;
    await a.r.put(noteState('refused-big', 1, 20_000)); // refused: Redis answered
    expect(a.r.primaryHealthy).toBe(true);
    await until(async () => (await reader.get('t', 'refused-small'))?.calls === 1);
  });
});
