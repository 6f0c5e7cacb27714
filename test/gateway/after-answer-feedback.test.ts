// A request's accounting can run before its answered attempt's routing feedback (a drain from a
// scrape or a budget lookup in the same I/O batch): it settles that feedback first, so the record
// still carries the uniform-choice figure (review s25 F6). Here the queue runs each job at once,
// inside the request's end, always before the feedback's setImmediate.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AfterAnswer } from '../../gateway/proxy/after-answer.ts';
import type { UsageEvent } from '../../gateway/usage-event.ts';
import { startRig, type TestRig } from '../helpers/gateway.ts';

describe('accounting before the routing feedback', () => {
  let rig: TestRig;
  const usage: UsageEvent[] = [];
  beforeAll(async () => {
    rig = await startRig({
      model: { policy: 'ctxgate' },
      deps: { afterAnswer: new AfterAnswer((run) => run()), onUsage: (ev) => usage.push(ev) },
    });
  });
  afterAll(async () => rig.close());

  it('the usage event has the uniform-choice figure though the job ran first', async () => {
    for (let i = 0; i < 2; i++)
      await rig.client().chat.completions.create({ model: 'm1', messages: [{ role: 'user', content: `hi ${i}` }] });
    expect(usage).toHaveLength(2);
    for (const ev of usage) expect(typeof ev.uniformCachedTokens).toBe('number');
  });
});
