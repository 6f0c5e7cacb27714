// /ready tells the truth before the first health round, and an unreachable worker is logged at warn,
// once per change of state rather than once per round.
import { afterEach, describe, expect, it } from 'vitest';
import { startRig, type TestRig } from '../helpers/gateway.ts';

let rig: TestRig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

interface LogLine {
  level: number;
  msg: string;
  worker?: string;
}

function logSink(): { lines: LogLine[]; logger: object } {
  const lines: LogLine[] = [];
  return { lines, logger: { level: 'info', stream: { write: (s: string) => lines.push(JSON.parse(s) as LogLine) } } };
}

describe('/ready', () => {
  it('503 before any worker answered, 200 after one health round', async () => {
    rig = await startRig({ config: { health: { interval_ms: 0 } } });
    const before = await fetch(`${rig.gw.url}/ready`);
    expect(before.status).toBe(503);
    expect(await before.json()).toEqual({
      status: 'not_ready',
      models: { m1: { healthy: 0, workers: 2, unchecked: 2 } },
    });
    await rig.gw.checkHealth();
    const after = await fetch(`${rig.gw.url}/ready`);
    expect(after.status).toBe(200);
    expect(await after.json()).toEqual({ status: 'ready', models: { m1: { healthy: 2, workers: 2, unchecked: 0 } } });
  });

  it('stays 503 while no worker of a model answers', async () => {
    rig = await startRig({ config: { health: { interval_ms: 0 } } });
    for (const u of rig.ups) u.knobs.healthy = false;
    await rig.gw.checkHealth();
    expect((await fetch(`${rig.gw.url}/ready`)).status).toBe(503);
  });
});

describe('health logs', () => {
  it('warns once when a worker becomes unreachable and once when it is ejected; info when it is back', async () => {
    const sink = logSink();
    rig = await startRig({
      config: { health: { interval_ms: 0, eject_after: 2, readmit_after: 1 } },
      deps: { logger: sink.logger },
    });
    await rig.gw.checkHealth();
    rig.ups[0].knobs.healthy = false;
    for (let i = 0; i < 4; i++) await rig.gw.checkHealth();
    const warn = sink.lines.filter((l) => l.level === 40);
    expect(warn.map((l) => [l.msg, l.worker])).toEqual([
      ['worker unreachable', 'a'],
      ['worker ejected: no requests are routed to it', 'a'],
    ]);
    rig.ups[0].knobs.healthy = true;
    await rig.gw.checkHealth();
    await rig.gw.checkHealth();
    const info = sink.lines.filter((l) => l.level === 30 && l.worker === 'a').map((l) => l.msg);
    expect(info).toEqual(['worker answers again', 'worker re-admitted']);
  });
});
