// Traffic of `bench hostile`: the quiet tenant's small requests, the /health prober, and the
// hostile tenant's attacks (400k-character prompts back to back, 100k characters without a space,
// malformed tool schemas at 8/s, slow-header and slow-body connections). Each loop runs until a
// deadline and records latencies or statuses; nothing here knows the gateway's internals.
import { connect, type Socket } from 'node:net';
import { Worker } from 'node:worker_threads';
import { request } from 'undici';

export interface Tally {
  ms: number[];
  statuses: Record<string, number>;
}

export const emptyTally = (): Tally => ({ ms: [], statuses: {} });

const count = (t: Tally, k: string | number): void => void (t.statuses[k] = (t.statuses[k] ?? 0) + 1);
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export interface Target {
  url: string;
  model: string;
}

/** One chat call; the answer's JSON when 200 (else undefined). */
export async function chat(
  t: Target,
  key: string,
  body: Record<string, unknown>,
  tally?: Tally,
  headers: Record<string, string> = {},
): Promise<{ status: number; json?: Record<string, unknown> }> {
  const t0 = performance.now();
  try {
    const res = await request(`${t.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, ...headers },
      body: JSON.stringify({ model: t.model, max_tokens: 8, ...body }),
      headersTimeout: 120_000,
      bodyTimeout: 120_000,
    });
    const text = await res.body.text();
    if (tally) {
      tally.ms.push(performance.now() - t0);
      count(tally, res.statusCode);
    }
    return { status: res.statusCode, json: res.statusCode === 200 ? JSON.parse(text) : undefined };
  } catch (err) {
    if (tally) count(tally, (err as { code?: string }).code ?? 'error');
    return { status: 0 };
  }
}

/** A deadline: a time, or a test that says when to stop. */
export type Until = number | (() => boolean);
const going = (u: Until): boolean => (typeof u === 'number' ? Date.now() < u : !u());

/** The quiet tenant: small calls one after another (a short pause between), until `until`. */
export async function quietTenant(t: Target, key: string, until: Until, tally: Tally, seq: { n: number }) {
  while (going(until)) {
    const i = seq.n++;
    await chat(
      t,
      key,
      {
        messages: [
          { role: 'system', content: 'You are the quiet tenant’s assistant. Answer briefly.' },
          { role: 'user', content: `Question ${i}: what does HTTP status ${200 + (i % 300)} mean?` },
        ],
      },
      tally,
    );
    await sleep(20);
  }
}

/** GET /health every `everyMs` until `until`. */
export async function healthProber(url: string, until: Until, tally: Tally, everyMs = 50) {
  while (going(until)) {
    const t0 = performance.now();
    try {
      const res = await request(`${url}/health`, { headersTimeout: 30_000 });
      await res.body.dump();
      tally.ms.push(performance.now() - t0);
      count(tally, res.statusCode);
    } catch (err) {
      count(tally, (err as { code?: string }).code ?? 'error');
    }
    await sleep(everyMs);
  }
}

const WORDS = ['def', 'return', 'self', 'value', 'import', 'class', 'for', 'in', 'range', 'if', 'else', 'None'];

/** `chars` characters of varied code-like text, distinct per seed (so no cache makes it cheap). */
export function bigText(chars: number, seed: number): string {
  const parts: string[] = [`# request ${seed}\n`];
  let n = parts[0].length;
  let x = (seed * 2654435761) >>> 0 || 1;
  while (n < chars) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    const w = `${WORDS[x % WORDS.length]}_${(x >>> 8) % 9973}${x % 7 === 0 ? '\n' : ' '}`;
    parts.push(w);
    n += w.length;
  }
  return parts.join('').slice(0, chars);
}

/** `chars` letters without a space or newline (one huge pre-token). */
export function noSpaceText(chars: number, seed: number): string {
  let s = '';
  let x = seed + 1;
  while (s.length < chars) {
    x = (x * 1103515245 + 12345) >>> 0;
    s += String.fromCharCode(97 + (x % 26)).repeat(1 + (x % 5));
  }
  return s.slice(0, chars);
}

export interface BigPromptOptions {
  chars: number;
  concurrency: number;
  noSpace?: boolean;
  seq: { n: number };
  /** Send this many calls in all and ignore `until` (tests: no wall-clock window, which would
   *  include the attacker thread's start on a loaded machine). */
  calls?: number;
}

/** The hostile tenant's big prompts, `concurrency` at a time, back to back until `until`. */
export async function bigPrompts(t: Target, key: string, until: number, tally: Tally, o: BigPromptOptions) {
  let sent = 0;
  const more = (): boolean => (o.calls === undefined ? Date.now() < until : sent < o.calls);
  const one = async () => {
    while (more()) {
      sent++;
      const i = o.seq.n++;
      const content = o.noSpace ? noSpaceText(o.chars, i) : bigText(o.chars, i);
      await chat(t, key, { messages: [{ role: 'user', content }] }, tally);
    }
  };
  await Promise.all(Array.from({ length: o.concurrency }, one));
}

/** Malformed tool schemas at `perSecond` (each should be a 400 naming the field, never a worker 500). */
export async function malformedTools(t: Target, key: string, until: number, tally: Tally, perSecond = 8) {
  while (Date.now() < until) {
    void chat(
      t,
      key,
      {
        messages: [{ role: 'user', content: 'use the tool' }],
        tools: [{ type: 'function', function: { name: 42, parameters: 'not a schema' } }],
      },
      tally,
    );
    await sleep(1000 / perSecond);
  }
}

/** Slow-header and slow-body connections: one byte a second. Returns how many are still open at `until`. */
export async function slowConnections(
  url: string,
  n: number,
  until: number,
): Promise<{ opened: number; open: number }> {
  const { hostname, port } = new URL(url);
  const socks: Socket[] = [];
  let open = 0;
  for (let i = 0; i < n; i++) {
    const slowBody = i % 2 === 1;
    const s = connect(Number(port), hostname);
    s.on('error', () => undefined);
    s.once('connect', () => {
      open++;
      s.write(
        slowBody
          ? `POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 100000\r\n\r\n{`
          : 'POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nx-slow: ',
      );
    });
    s.once('close', () => void (open = Math.max(0, open - 1)));
    socks.push(s);
  }
  while (Date.now() < until) {
    for (const s of socks) if (!s.destroyed) s.write('a');
    await sleep(1000);
  }
  const left = open;
  for (const s of socks) s.destroy();
  return { opened: n, open: left };
}

/**
 * bigPrompts on a worker thread (attacker-thread.mjs), so that the 10-30 ms of CPU each 400k
 * prompt costs its client never runs on the loop that times the quiet tenant. `seq.n` moves on by
 * the calls made, so prompts stay distinct across windows.
 */
export async function bigPromptsOffThread(
  t: Target,
  key: string,
  until: number,
  tally: Tally,
  o: BigPromptOptions,
): Promise<void> {
  const seq = { n: o.seq.n };
  const worker = new Worker(new URL('./attacker-thread.mjs', import.meta.url), {
    workerData: { target: t, key, until, opts: { ...o, seq } },
  });
  const got = await new Promise<Tally>((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
    worker.once('exit', (code) => reject(new Error(`attacker thread exited with ${code}`)));
  });
  await worker.terminate();
  o.seq.n += Object.values(got.statuses).reduce((a, b) => a + b, 0);
  tally.ms.push(...got.ms);
  for (const [k, v] of Object.entries(got.statuses)) tally.statuses[k] = (tally.statuses[k] ?? 0) + v;
}
