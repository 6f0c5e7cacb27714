// Two concurrent calls of one session over real sockets (assembled gateway, reference worker, the
// official openai SDK): the stored state must reflect both (calls === 2). The race is made
// deterministic by the test's store, a real MemorySessionStore whose first put of the session is
// held until the second call has either read the state too (the lost update: both started from
// the same version) or is waiting for the session's lock; so on a gateway without the lock the
// second call always reads the state before the first one's write, and the count ends at 1.
import { randomUUID } from 'node:crypto';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAssembledGateway } from '../../gateway/assemble.ts';
import { parseConfig } from '../../gateway/config/load.ts';
import { startSimWorker, type SimWorker } from '../../loadtest/sim-worker/index.ts';
import { MemorySessionStore } from '../../middleware/session/memory-store.ts';
import { sessionLockKey, sessionLockOf } from '../../middleware/session/session-lock.ts';
import type { SessionState, SessionStore } from '../../middleware/session/store.ts';
import { until as untilOr } from '../helpers/gateway.ts';

const model = 'race-model';
const TENANT = 'default';
type Gateway = Awaited<ReturnType<typeof startAssembledGateway>>;

/** The real memory store; the first put of `gated` waits until `release()` says so. */
class GatedStore implements SessionStore {
  readonly inner = new MemorySessionStore();
  gated = '';
  gets = 0;
  /** When set, the gated put waits for this instead (and says so in `holding`). */
  hold?: Promise<void>;
  holding = false;
  private held = false;
  async get(tenant: string, id: string): Promise<SessionState | undefined> {
    if (id === this.gated) this.gets++;
    return this.inner.get(tenant, id);
  }
  async put(state: SessionState): Promise<void> {
    if (state.sessionId === this.gated && !this.held) {
      this.held = true;
      if (this.hold) {
        this.holding = true;
        await this.hold;
        return this.inner.put(state);
      }
      const lock = sessionLockOf(this);
      const key = sessionLockKey(state.tenant, state.sessionId);
      // the second call has read the state (no lock) or waits for the lock: either way it is in
      while (this.gets < 2 && lock.waiting(key) === 0) await new Promise((r) => setTimeout(r, 5));
    }
    return this.inner.put(state);
  }
  delete(tenant: string, id: string): Promise<void> {
    return this.inner.delete(tenant, id);
  }
  list(tenant: string, limit?: number): Promise<string[]> {
    return this.inner.list(tenant, limit);
  }
  close(): Promise<void> {
    return this.inner.close();
  }
  reset(id: string): void {
    this.gated = id;
    this.gets = 0;
    this.held = false;
    this.hold = undefined;
    this.holding = false;
  }
  /** Gates `id` afresh; its first put waits until the returned function is called. */
  holdFirstPut(id: string): () => void {
    this.reset(id);
    let open = (): void => undefined;
    this.hold = new Promise<void>((r) => {
      open = r;
    });
    return () => open();
  }
}

/** Waits for a step of the race (generous: the machine may be loaded; nothing here is timed). */
const until = (cond: () => boolean): Promise<void> => untilOr(cond, 120_000);

let worker: SimWorker;
let gw: Gateway;
const store = new GatedStore();

beforeAll(async () => {
  worker = await startSimWorker({ port: 0, model, tokenizer: 'qwen3', timeScale: 0, seed: 1 });
  const config = parseConfig({
    listen: { host: '127.0.0.1', port: 0 },
    health: { interval_ms: 0 },
    models: [{ name: model, tokenizer: 'qwen3', workers: [{ url: worker.url, id: 'w0' }] }],
  });
  gw = await startAssembledGateway(config, { logger: false, reporting: false, store, tracing: null });
});
afterAll(async () => {
  await gw?.close();
  await worker?.close();
});

const system = 'You are a careful coding agent. Explain each step. '.repeat(20);
const body = (task: string) => ({
  model,
  max_tokens: 4,
  messages: [
    { role: 'system' as const, content: system },
    { role: 'user' as const, content: task },
  ],
});

function client(headers: Record<string, string>): OpenAI {
  return new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'none', maxRetries: 0, defaultHeaders: headers });
}

describe('concurrent calls of one session', () => {
  it('with a session header: both calls counted in the stored state', async () => {
    const id = `race-${randomUUID()}`;
    store.reset(id);
    const c = client({ 'x-session-id': id });
    const ask = (task: string) => c.chat.completions.create(body(task));
    const answers = await Promise.all([ask('Inspect a.py.'), ask('Inspect b.py.')]);
    expect(answers.map((a) => a.choices.length)).toEqual([1, 1]);
    const state = await store.inner.get(TENANT, id);
    expect(state?.calls).toBe(2);
    expect(sessionLockOf(store).size).toBe(0);
  });

  it('with a derived session id (no header): both calls counted', async () => {
    const task = `Inspect c.py (${randomUUID()}).`;
    const c = client({});
    const ask = () => c.chat.completions.create(body(task)).withResponse();
    // learn the derived id from a first call, then race two more
    const first = await ask();
    const id = first.response.headers.get('x-ctxgate-session') ?? '';
    expect(id).not.toBe('');
    store.reset(id);
    await Promise.all([ask(), ask()]);
    const state = await store.inner.get(TENANT, id);
    expect(state?.calls).toBe(3);
  });

  it('the body goes upstream while the state is stored; the client gets its answer only once it is stored', async () => {
    const id = `race-${randomUUID()}`;
    const open = store.holdFirstPut(id);
    const before = worker.stats().requests;
    let answered = false;
    const c = client({ 'x-session-id': id });
    const call = c.chat.completions.create(body('Inspect g.py.')).then((r) => {
      answered = true;
      return r;
    });
    // The put is held, yet the worker has the call: the state write does not delay dispatch.
    await until(() => store.holding);
    await until(() => worker.stats().requests > before);
    // The worker answers at once (timeScale 0); the client must not hear of it before the state is
    // stored (a client's next call could otherwise read the state without this call). A wrong gateway
    // answers within this wait; a right one never does, however slow the host.
    await new Promise((r) => setTimeout(r, 300));
    expect(answered).toBe(false);
    expect(await store.inner.get(TENANT, id)).toBeUndefined();
    open();
    expect((await call).choices).toHaveLength(1);
    expect((await store.inner.get(TENANT, id))?.calls).toBe(1);
    expect(sessionLockOf(store).size).toBe(0);
  });

  /**
   * Holds the session's put, sends `call`, waits until the gateway has the worker's answer
   * (`reached`, made before the call is sent), gives the client's socket a few turns of the event loop, and checks that the
   * client heard nothing; then releases the put. A gateway that does not wait writes the status
   * line in the same turn it gets the answer; a right one never does before the release.
   */
  async function heldUntilStored(
    id: string,
    call: () => Promise<unknown>,
    reachedFrom: () => () => boolean,
  ): Promise<unknown> {
    const open = store.holdFirstPut(id);
    const reached = reachedFrom();
    let answered = false;
    const pending = call().finally(() => {
      answered = true;
    });
    await until(() => store.holding);
    await until(reached);
    await new Promise((r) => setTimeout(r, 50));
    expect(answered).toBe(false);
    expect(await store.inner.get(TENANT, id)).toBeUndefined();
    open();
    const out = await pending;
    expect((await store.inner.get(TENANT, id))?.calls).toBe(1);
    expect(sessionLockOf(store).size).toBe(0);
    return out;
  }
  const gwWorker = () => gw.ctx.fleet.get(model)!.workers[0];

  it('stream: the SSE status line waits until the state is stored', async () => {
    const id = `race-${randomUUID()}`;
    const c = client({ 'x-session-id': id });
    // the SDK resolves a stream at its status line; the gateway has the worker's first byte once
    // the prompt's queued prefill left the worker's count
    const stream = await heldUntilStored(
      id,
      () => c.chat.completions.create({ ...body('Inspect h.py.'), stream: true }),
      () => {
        const before = worker.stats().requests;
        return () => worker.stats().requests > before && gwWorker().queuedPrefillTokens === 0;
      },
    );
    let text = '';
    for await (const chunk of stream as AsyncIterable<{ choices: { delta: { content?: string | null } }[] }>)
      text += chunk.choices[0]?.delta.content ?? '';
    expect(text.length).toBeGreaterThan(0);
  });

  it("a worker's 5xx reaches the client only once the state is stored", async () => {
    const id = `race-${randomUUID()}`;
    const c = client({ 'x-session-id': id });
    worker.setFault({ failRate: 1, failStatus: 500 });
    try {
      const err = await heldUntilStored(
        id,
        () => c.chat.completions.create(body('Inspect i.py.')).catch((e: unknown) => e),
        () => {
          // the gateway noted the worker's 500 and ended the attempt
          const last = gwWorker().lastErrors.at(-1);
          return () => gwWorker().lastErrors.at(-1) !== last && gwWorker().inFlight === 0;
        },
      );
      expect((err as { status?: number }).status).toBe(500);
    } finally {
      worker.setFault({ failRate: 0 });
    }
  });

  it('a waiting call whose client goes away leaves the queue; the session goes on', async () => {
    const id = `race-${randomUUID()}`;
    const open = store.holdFirstPut(id);
    const key = sessionLockKey(TENANT, id);
    const lock = sessionLockOf(store);
    const c = client({ 'x-session-id': id });
    const first = c.chat.completions.create(body('Inspect d.py.'));
    await until(() => store.holding);
    const ac = new AbortController();
    const second = c.chat.completions.create(body('Inspect e.py.'), { signal: ac.signal }).catch((e: unknown) => e);
    await until(() => lock.waiting(key) === 1);
    ac.abort();
    expect(await second).toBeInstanceOf(Error);
    await until(() => lock.waiting(key) === 0);
    open();
    expect((await first).choices).toHaveLength(1);
    expect((await store.inner.get(TENANT, id))?.calls).toBe(1);
    await c.chat.completions.create(body('Inspect f.py.'));
    expect((await store.inner.get(TENANT, id))?.calls).toBe(2);
    expect(lock.size).toBe(0);
  });
});
