// Graceful shutdown: SIGTERM to a real `ctxgate serve` child during a slow stream lets the stream
// finish and the process exit 0; past shutdown.deadline_ms the stream ends with an SSE error
// event instead of hanging; close hooks registered with onShutdown run once, after in-flight work.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { connect } from 'node:net';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.ts';
import { startRig } from '../helpers/gateway.ts';

const BIN = new URL('../../bin/ctxgate.js', import.meta.url).pathname;
let up: FakeUpstream | undefined;
let child: ChildProcess | undefined;
afterEach(async () => {
  if (child && child.exitCode === null) child.kill('SIGKILL');
  child = undefined;
  await up?.close();
  up = undefined;
});

async function serve(upstreamUrl: string, deadlineMs: number): Promise<{ url: string; exit: Promise<number | null> }> {
  const dir = mkdtempSync(join(tmpdir(), 'ctxgate-shutdown-'));
  const cfg = join(dir, 'gw.yaml');
  writeFileSync(
    cfg,
    // the ledger in the test's own folder, never ctxgate-usage.sqlite in the checkout
    `listen: { host: 127.0.0.1, port: 0 }\nhealth: { interval_ms: 0 }\nshutdown: { deadline_ms: ${deadlineMs} }\n` +
      `ledger: { path: '${join(dir, 'usage.sqlite')}' }\n` +
      `models:\n  - name: m1\n    layout: passthrough\n    workers: [{ url: '${upstreamUrl}', id: w1 }]\n`,
  );
  child = spawn(process.execPath, [BIN, 'serve', '--config', cfg], { stdio: ['ignore', 'pipe', 'pipe'] });
  const exit = new Promise<number | null>((resolve) => child!.once('exit', (code) => resolve(code)));
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    child!.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /"url":"(http:[^"]+)"/.exec(out);
      if (m) resolve(m[1]);
    });
    child!.once('exit', (code) => reject(new Error(`serve exited early (${code}): ${out}`)));
  });
  return { url, exit };
}

/** Resolves once a new TCP connection to `url` is refused (the listener closed); a minute at most. */
async function refused(url: string): Promise<void> {
  const { hostname, port } = new URL(url);
  const end = Date.now() + 60_000;
  for (;;) {
    const accepted = await new Promise<boolean>((resolve) => {
      const s = connect(Number(port), hostname);
      s.once('connect', () => {
        s.destroy();
        resolve(true);
      });
      s.once('error', () => resolve(false));
    });
    if (!accepted) return;
    if (Date.now() > end) throw new Error('the listener still accepts connections a minute after SIGTERM');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('SIGTERM during a stream', () => {
  it('lets the in-flight stream complete, refuses new work and exits 0', async () => {
    up = await startFakeUpstream({ name: 'slow', knobs: { chunkDelayMs: 60, words: 20 } });
    const gw = await serve(up.url, 20_000);
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'none', maxRetries: 0 });
    const stream = await client.chat.completions.create({
      model: 'm1',
      stream: true,
      messages: [{ role: 'user', content: 'go' }],
    });
    let text = '';
    let signalled = false;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? '';
      if (!signalled && text) {
        signalled = true;
        child!.kill('SIGTERM');
        // The listener closes: a new connection is refused (soon; how soon depends on the machine's load).
        await refused(gw.url);
      }
    }
    expect(signalled).toBe(true);
    expect(text).toBe('hello from slow' + Array.from({ length: 19 }, (_, i) => ` w${i + 1}`).join(''));
    expect(await gw.exit).toBe(0);
  });

  it('ends a stream still running at the deadline with an SSE error event, then exits 0', async () => {
    up = await startFakeUpstream({ name: 'slower', knobs: { chunkDelayMs: 200, words: 50 } });
    const gw = await serve(up.url, 300);
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm1', stream: true, messages: [{ role: 'user', content: 'go' }] }),
    });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    const first = await reader.read();
    expect(new TextDecoder().decode(first.value)).toContain('data:');
    child!.kill('SIGTERM');
    let rest = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      rest += new TextDecoder().decode(value);
    }
    expect(rest).toContain('"code":"shutting_down"');
    expect(rest.trimEnd().endsWith('data: [DONE]')).toBe(true);
    expect(await gw.exit).toBe(0);
  });
});

describe('onShutdown hooks', () => {
  it('run once, last registered first, after in-flight requests, and a failing hook does not stop the others', async () => {
    const rig = await startRig({ upstreams: [{ name: 'a', knobs: { chunkDelayMs: 30, words: 10 } }] });
    const order: string[] = [];
    rig.gw.ctx.onShutdown(() => order.push('ledger'), 'ledger');
    rig.gw.ctx.onShutdown(() => {
      throw new Error('boom');
    }, 'bad');
    rig.gw.ctx.onShutdown(async () => order.push(`sessions(in-flight=${rig.gw.ctx.lifecycle.inFlight})`), 'sessions');
    const stream = await rig
      .client()
      .chat.completions.create({ model: 'm1', stream: true, messages: [{ role: 'user', content: 'go' }] });
    const it = stream[Symbol.asyncIterator]();
    await it.next();
    const closing = rig.close().then(() => order.push('closed'));
    let n = 1;
    let finish: string | null | undefined;
    for (let r = await it.next(); !r.done; r = await it.next()) {
      n++;
      finish = r.value.choices[0]?.finish_reason ?? finish;
    }
    await closing;
    await rig.close();
    expect(n).toBeGreaterThan(10);
    expect(finish).toBe('stop');
    expect(order).toEqual(['sessions(in-flight=0)', 'ledger', 'closed']);
  });
});
