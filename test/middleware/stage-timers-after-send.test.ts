// With the stage timers on (CTXGATE_STAGE_TIMERS=1, as `bench overhead` runs its gateway), the
// pipeline's commit times the stages' after-send jobs as their own section, `after_send`, once a
// call, between `diagnose` and `store_put`; bench overhead's stage table lists it in that order.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { perRequest } from '../../loadtest/overhead/stage-table.ts';
import type { ChatRequest } from '../../middleware/types.ts';

afterEach(() => {
  vi.unstubAllEnvs();
  vi.resetModules();
});

describe('after_send stage timer', () => {
  it('is lapped once a call between diagnose and store_put, and listed there', async () => {
    // The timers read the environment when their module loads: fresh modules under the stub.
    vi.stubEnv('CTXGATE_STAGE_TIMERS', '1');
    vi.resetModules();
    const timers = await import('../../middleware/perf/stage-timers.ts');
    const { createPipeline } = await import('../../middleware/pipeline.ts');
    expect(timers.stageTimersOn).toBe(true);
    const p = createPipeline({ model: 'm', tokenizer: 'cl100k_base' });
    const ctx = { tenant: 't', requestId: 'r', headers: { 'x-session-id': 's' }, model: 'm' };
    const messages: ChatRequest['messages'] = [{ role: 'user', content: 'read the file' }];
    timers.resetStageTimes();
    for (let i = 0; i < 3; i++) {
      await p.process({ model: 'm', messages: messages.slice() }, ctx);
      messages.push({ role: 'assistant', content: `step ${i}` }, { role: 'user', content: `more ${i}` });
    }
    const times = timers.stageTimes();
    expect(times.after_send?.n).toBe(3);
    const trace = timers.stageTrace();
    const order = trace.stage.map((i) => trace.stages[i]).filter((s) => /^(diagnose|after_send|store_put)$/.test(s));
    expect(order).toEqual(Array.from({ length: 3 }, () => ['diagnose', 'after_send', 'store_put']).flat());
    expect(Object.keys(perRequest(times, 3)).filter((k) => /^(diagnose|after_send|store_put)$/.test(k))).toEqual([
      'diagnose',
      'after_send',
      'store_put',
    ]);
  }, 60_000);
});
