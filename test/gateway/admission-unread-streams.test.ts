// Review s35 F5 over real sockets: a tenant that opens streams and never reads them keeps them in
// flight at the gateway after the engine has finished them. Late binding must not count those as
// calls waiting at the engine (engine idle, nothing waiting there): another tenant's call goes on
// at once instead of being held at the gate (for up to max_wait_ms, 30 min by default).
import { request as httpRequest } from 'node:http';
import type { Socket } from 'node:net';
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { gateFor } from '../../gateway/admission/gates.ts';
import { ADMISSION_DEFAULTS } from '../../kvplanner/admission/admission-defaults.ts';
import { keysAuth } from '../helpers/keys.ts';
import { type SimGateway, startSimGateway } from '../helpers/sim-gateway.ts';
import { until } from '../helpers/until.ts';

const KEYS = { slow: 'key-slow', victim: 'key-victim' };
let rig: SimGateway | undefined;
const sockets: Socket[] = [];
afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  await rig?.close();
  rig = undefined;
});

/** Opens a long streaming call and never reads its answer (the socket paused). */
function unreadStream(url: string, i: number): void {
  const u = new URL(url);
  const body = JSON.stringify({
    model: 'm',
    stream: true,
    ignore_eos: true,
    max_tokens: 30_000,
    messages: [{ role: 'user', content: `a long answer ${i}` }],
  });
  const req = httpRequest(
    {
      host: u.hostname,
      port: u.port,
      path: '/v1/chat/completions',
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: `Bearer ${KEYS.slow}`,
        'content-length': Buffer.byteLength(body),
      },
    },
    (res) => res.pause(),
  );
  req.on('socket', (s) => sockets.push(s));
  req.on('error', () => undefined);
  req.end(body);
}

describe('late binding with unread streams', () => {
  it('answers another tenant at once while one tenant holds answered streams it does not read (engine idle, max_waiting of them in flight)', async () => {
    rig = await startSimGateway({
      workers: 1,
      config: { auth: keysAuth(KEYS) },
      modelConfig: { layout: 'passthrough', policy: 'round_robin', dispatch: 'admission', scrape_metrics_ms: 20 },
    });
    const route = rig.gw.ctx.fleet.get('m')!;
    const gate = gateFor(route)!;
    // as many unread streams as the gate lets wait at an engine
    const maxWaiting = ADMISSION_DEFAULTS.max_waiting;
    const victim = new OpenAI({ baseURL: `${rig.gw.url}/v1`, apiKey: KEYS.victim, maxRetries: 0, timeout: 60_000 });
    const ask = (content: string) =>
      victim.chat.completions.create({ model: 'm', max_tokens: 8, messages: [{ role: 'user', content }] });
    expect((await ask('before')).choices[0].message.content?.length).toBeGreaterThan(0);
    for (let i = 0; i < maxWaiting; i++) unreadStream(rig.gw.url, i);
    const w = route.workers[0];
    // the engine has finished them (nothing running or waiting there, as scraped), the gateway
    // still relays them: in flight, answered
    await until(
      () =>
        w.inFlight === maxWaiting && w.awaitingFirstByte === 0 && w.engine?.running === 0 && w.engine?.waiting === 0,
    );
    const queued = gate.stats.queued;
    const answer = await ask('during');
    expect(answer.choices[0].message.content?.length).toBeGreaterThan(0);
    // not held at the gate at all, and the unread streams are still in flight
    expect(gate.stats.queued).toBe(queued);
    expect(w.inFlight).toBe(maxWaiting);
  });
});
