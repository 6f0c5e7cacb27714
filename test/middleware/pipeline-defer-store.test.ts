// `deferStore` (the gateway's request path): process() returns before the session state is written,
// the write (and the cache-break diagnostics) runs on the next turn of the event loop under the session's lock, and `result.stored`
// settles once it is stored. A session's next call, even one sent before the write finished, must
// read this call's state; the outputs and the stored states must be those of the eager pipeline;
// a put that fails must not keep the lock.
import { describe, expect, it } from 'vitest';
import { createPipeline } from '../../middleware/pipeline.ts';
import { MemorySessionStore } from '../../middleware/session/memory-store.ts';
import type { SessionState, SessionStore } from '../../middleware/session/store.ts';
import type { ChatRequest, PipelineContext, PipelineResult } from '../../middleware/types.ts';
import { randomSession, requestsOf } from './helpers/session-gen.ts';

const MODEL = 'm';

/** A memory store that logs each get and put (the order the lock must keep). */
class LoggedStore implements SessionStore {
  readonly log: string[] = [];
  failPuts = false;
  constructor(private readonly inner = new MemorySessionStore()) {}
  async get(tenant: string, id: string) {
    const s = await this.inner.get(tenant, id);
    this.log.push(`get ${s?.calls ?? 0}`);
    return s;
  }
  async put(st: SessionState) {
    if (this.failPuts) throw new Error('store down');
    await this.inner.put(st);
    this.log.push(`put ${st.calls}`);
  }
  delete(tenant: string, id: string) {
    return this.inner.delete(tenant, id);
  }
  list(tenant: string) {
    return this.inner.list(tenant);
  }
  async close() {}
}

function timeless(st: SessionState | undefined): unknown {
  return JSON.parse(
    JSON.stringify(st ?? null, (k, v) => (k === 'updatedAt' || k === 'at' || k === 'checksum' ? undefined : v)),
  );
}

const ctxOf = (n: number, deferStore: boolean): PipelineContext => ({
  tenant: 't',
  requestId: `r${n}`,
  headers: { 'x-session-id': 's1' },
  model: MODEL,
  deferStore,
});

/** A pipeline over a LoggedStore and the request of call k of a generated 3-call session. */
function threeCalls(seed: number) {
  const store = new LoggedStore();
  const p = createPipeline({ model: MODEL, tokenizer: 'qwen3', store });
  const calls = requestsOf(randomSession(seed, 3));
  const body = (k: number) => ({ model: MODEL, messages: calls[k], max_tokens: 8 }) as ChatRequest;
  return { store, p, body };
}

describe('pipeline deferStore', () => {
  it('each call is stored after process() returned, before the next call reads it; outputs and states equal the eager run', async () => {
    const lazyStore = new LoggedStore();
    const eagerStore = new LoggedStore();
    const lazy = createPipeline({ model: MODEL, tokenizer: 'qwen3', store: lazyStore });
    const eager = createPipeline({ model: MODEL, tokenizer: 'qwen3', store: eagerStore });
    const calls = requestsOf(randomSession(7, 16));
    let pending: PipelineResult | undefined;
    const pairs: [PipelineResult, PipelineResult][] = [];
    let deferred = 0;
    for (let k = 0; k < calls.length; k++) {
      const json = JSON.stringify({ model: MODEL, messages: calls[k], max_tokens: 8 });
      // The next call starts while the previous call's write may still be under way.
      const rl = await lazy.process(JSON.parse(json) as ChatRequest, ctxOf(k, true));
      const re = await eager.process(JSON.parse(json) as ChatRequest, ctxOf(k, false));
      expect(re.stored).toBeUndefined();
      expect(rl.stored).toBeInstanceOf(Promise);
      // Deferred: the state of call k is not in the store when process() returns.
      if (lazyStore.log.at(-1) !== `put ${k + 1}`) deferred++;
      expect(JSON.stringify(rl.body), `call ${k}`).toBe(JSON.stringify(re.body));
      expect(rl.receipts, `call ${k}`).toEqual(re.receipts);
      // The diagnostics are made after the send, with the state write (PipelineResult.prefix).
      expect(rl.prefix, `call ${k}`).toBeUndefined();
      expect(rl.blockHashes, `call ${k}`).toEqual(re.blockHashes);
      pairs.push([rl, re]);
      pending = rl;
    }
    await pending?.stored;
    for (const [k, [rl, re]] of pairs.entries()) expect(rl.prefix, `call ${k}`).toEqual(re.prefix);
    expect(deferred).toBe(calls.length);
    // Every get saw the put of the call before it: get 0, put 1, get 1, put 2, ...
    const want = calls.flatMap((_, k) => [`get ${k}`, `put ${k + 1}`]);
    expect(lazyStore.log).toEqual(want);
    expect(eagerStore.log).toEqual(want);
    expect(timeless(await lazyStore.get('t', 's1'))).toEqual(timeless(await eagerStore.get('t', 's1')));
  }, 120_000);

  it('concurrent calls of one session: the second waits for the first call state to be stored', async () => {
    const { store, p, body } = threeCalls(11);
    const [a, b] = await Promise.all([p.process(body(0), ctxOf(0, true)), p.process(body(1), ctxOf(1, true))]);
    await Promise.all([a.stored, b.stored]);
    expect(store.log).toEqual(['get 0', 'put 1', 'get 1', 'put 2']);
  }, 60_000);

  it('a put that fails: stored settles, a warning says so, the lock is released for the next call', async () => {
    const { store, p, body } = threeCalls(13);
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(w.message);
    process.on('warning', onWarning);
    try {
      store.failPuts = true;
      const r0 = await p.process(body(0), ctxOf(0, true));
      await r0.stored;
      store.failPuts = false;
      const r1 = await p.process(body(1), ctxOf(1, true));
      await r1.stored;
      await new Promise((r) => setImmediate(r));
    } finally {
      process.off('warning', onWarning);
    }
    expect(warnings.some((w) => w.includes('session state not stored: store down'))).toBe(true);
    // The failed call's state is lost (said above); the next one starts afresh and is stored.
    expect(store.log).toEqual(['get 0', 'get 0', 'put 1']);
  }, 60_000);
});
