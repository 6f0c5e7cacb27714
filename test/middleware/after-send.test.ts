// The after-send hook (middleware/after-send.ts) and the pipeline's `sent` gate: a deferred call's
// state write waits for the caller's send, runs the stages' after-send jobs in order before the
// put, and `stored` settles only after it.
import { describe, expect, it } from 'vitest';
import { AfterSendQueue, afterSend } from '../../middleware/after-send.ts';
import { createPipeline } from '../../middleware/pipeline.ts';
import { MemorySessionStore } from '../../middleware/session/memory-store.ts';
import type { SessionState } from '../../middleware/session/store.ts';
import type { ChatRequest } from '../../middleware/types.ts';

const turns = () => new Promise<void>((r) => setImmediate(() => setImmediate(r)));

describe('AfterSendQueue', () => {
  it('runs jobs in order, awaiting async ones, including jobs queued by jobs', async () => {
    const q = new AfterSendQueue();
    const log: string[] = [];
    const add = q.add.bind(q);
    add(() => void log.push('a'));
    add(async () => {
      await turns();
      log.push('b');
      add(() => void log.push('d'));
    });
    add(() => void log.push('c'));
    expect(q.pending).toBe(3);
    expect(log).toEqual([]);
    await q.run();
    expect(log).toEqual(['a', 'b', 'c', 'd']);
    expect(q.pending).toBe(0);
  });

  it('a job that throws rejects the run; the jobs after it do not run', async () => {
    const q = new AfterSendQueue();
    const log: string[] = [];
    q.add(() => {
      throw new Error('stage bug');
    });
    q.add(() => void log.push('after'));
    await expect(q.run()).rejects.toThrow('stage bug');
    expect(log).toEqual([]);
  });

  it('afterSend(ctx, job) queues with a queue and runs at once without one', () => {
    const q = new AfterSendQueue();
    const log: string[] = [];
    afterSend({ afterSend: q.add.bind(q) }, () => void log.push('queued'));
    expect(log).toEqual([]);
    afterSend({}, () => void log.push('now'));
    expect(log).toEqual(['now']);
  });
});

class CountingStore extends MemorySessionStore {
  puts = 0;
  override async put(st: SessionState): Promise<void> {
    this.puts++;
    return super.put(st);
  }
}

describe('pipeline with a send gate (PipelineContext.sent)', () => {
  it('the state write waits for the send; stored settles after the put; the next call reads it', async () => {
    const store = new CountingStore();
    const p = createPipeline({ model: 'm', tokenizer: 'qwen3', store });
    const body = (text: string) =>
      ({ model: 'm', max_tokens: 4, messages: [{ role: 'user', content: text }] }) as ChatRequest;
    let send: (() => void) | undefined;
    const ctx = {
      tenant: 't',
      requestId: 'r1',
      headers: { 'x-session-id': 's1' },
      model: 'm',
      deferStore: true,
      sent: (run: () => void) => {
        send = run;
      },
    };
    const r = await p.process(body('first'), ctx);
    let stored = false;
    void r.stored?.then(() => {
      stored = true;
    });
    await turns();
    // Not sent yet: nothing written, the lock still held.
    expect(store.puts).toBe(0);
    expect(stored).toBe(false);
    expect(send).toBeTypeOf('function');
    // The session's next call queues on the lock meanwhile.
    const next = p.process(body('first'), { ...ctx, requestId: 'r2', sent: (run: () => void) => run() });
    await turns();
    expect(store.puts).toBe(0);
    send?.();
    await r.stored;
    expect(store.puts).toBe(1);
    expect((await store.get('t', 's1'))?.calls).toBe(1);
    const r2 = await next;
    await r2.stored;
    expect((await store.get('t', 's1'))?.calls).toBe(2);
  }, 60_000);
});
