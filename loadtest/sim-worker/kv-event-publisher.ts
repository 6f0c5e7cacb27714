// The reference worker's KV event publisher, as vLLM's ZmqEventPublisher works
// (vllm/distributed/kv_events.py): a PUB socket sends [topic, seq (8 bytes big-endian), msgpack
// KVEventBatch] per engine step, seq counting from 0; the last `buffer_steps` batches are kept, and
// a ROUTER socket (replay_endpoint) answers a request [identity, empty, start seq] with every kept
// batch from `start` on as [identity, empty, seq, payload], then [identity, empty, -1, empty].
// Endpoints are bound here (vLLM binds when the address has `*`; the worker is the stable side);
// port 0 or `*` takes a free port (see `endpoint`). Events of one engine step (one request's
// admission or completion) go out as one batch, a stored chain as one BlockStored with its parent.
// The SGLang flavour (layout 'sglang') publishes as SGLang's radix cache does: one BlockStored per
// page (SGLang's default page_size 1: one per token), never merged, each carrying the request's
// cache_salt, one BlockRemoved per evicted radix node with its pages' hashes (encodeSglangBatch).
// Faults for tests: dropNext(n) keeps the next n batches out of the PUB socket but in the replay
// buffer (what a full PUB high-water mark does); stop()/start() take the sockets down and up
// again with seq and buffer kept (a partition, not an engine restart); freeze()/thaw(): the
// sockets stay connected but nothing is sent and replay requests go unanswered (a hung process);
// flood(seq): every replay request is answered with the last batch under `seq` again and again,
// never the end marker (a broken publisher, or another process on the replay port).
// Cost: O(events) per batch; replay O(buffer).
import { Publisher, Router } from 'zeromq';
import {
  encodeBatch,
  encodeSglangBatch,
  type OutgoingEvent,
  REPLAY_END_SEQ,
  readSeq,
  seqBytes,
} from '../../kvplanner/kv-events/wire.ts';
import type { BlockEventSink } from './block-cache.ts';

/** vLLM's defaults (KVEventsConfig). */
export const DEFAULT_KV_EVENTS_BUFFER_STEPS = 10_000;
export const DEFAULT_KV_EVENTS_HWM = 100_000;

export interface KvEventsOptions {
  /** PUB address, e.g. tcp://127.0.0.1:5557 (`*` or port 0: any free port) */
  endpoint: string;
  /** ROUTER address for replay requests (none: no replay) */
  replayEndpoint?: string;
  topic: string;
  bufferSteps: number;
  /** vllm (default): merged chains, vLLM's map encoding; sglang: one event per radix page, arrays */
  layout?: 'vllm' | 'sglang';
}

/** `tcp://*:0` → `tcp://127.0.0.1:*`: ZeroMQ's own spelling of "any free port". */
function bindable(ep: string): string {
  return ep.replace('tcp://*:', 'tcp://0.0.0.0:').replace(/:0$/, ':*');
}

/** Binds, waiting out a port the previous socket on it is still releasing (a restart: close()
 *  hands the listener to ZeroMQ's reaper thread, which lets the port go a moment later). Only for a
 *  fresh socket with no send or receive pending: bind() runs on a libuv pool thread. */
async function bindRetrying(socket: Publisher | Router, ep: string): Promise<void> {
  const deadline = Date.now() + BIND_DEADLINE_MS;
  for (;;) {
    try {
      return await socket.bind(ep);
    } catch (err) {
      if (Date.now() > deadline || !/in use/i.test((err as Error).message)) throw err;
      await new Promise((r) => setTimeout(r, BIND_RETRY_MS));
    }
  }
}
/** Longest wait for a port still being released (generous: a loaded machine runs the reaper late). */
const BIND_DEADLINE_MS = 10_000;
const BIND_RETRY_MS = 50;

/** Parses a block key of the worker (`h1.h2.len`, base 36) into the 64-bit hash published. */
export function keyHash(key: string): bigint {
  const [a, b] = key.split('.');
  return (BigInt(Number.parseInt(a, 36)) << 32n) | BigInt(Number.parseInt(b, 36));
}

export class KvEventPublisher implements BlockEventSink {
  private pub: Publisher | undefined;
  private router: Router | undefined;
  private seq = 0n;
  private readonly buffer: Array<{ seq: bigint; payload: Uint8Array }> = [];
  private pending: OutgoingEvent[] = [];
  private scheduled = false;
  private sending: Promise<void> = Promise.resolve();
  private drop = 0;
  private frozen = false;
  private flooding: bigint | undefined;
  /** the replay loop and any flood runs: stop() waits for them to end */
  private replaying = new Set<Promise<void>>();
  endpoint = '';
  replayEndpoint: string | undefined;
  /** Batches published (sent or dropped), those kept out of the PUB socket, replay messages flooded. */
  readonly counts = { batches: 0, dropped: 0, replays: 0, flooded: 0 };

  constructor(private readonly o: KvEventsOptions) {}

  async start(): Promise<this> {
    if (this.pub) return this;
    const pub = new Publisher({ sendHighWaterMark: DEFAULT_KV_EVENTS_HWM, linger: 0 });
    await bindRetrying(pub, this.endpoint || bindable(this.o.endpoint));
    this.endpoint = pub.lastEndpoint ?? this.o.endpoint;
    this.pub = pub;
    if (this.o.replayEndpoint) {
      const router = new Router({ linger: 0 });
      await bindRetrying(router, this.replayEndpoint || bindable(this.o.replayEndpoint));
      this.replayEndpoint = router.lastEndpoint ?? this.o.replayEndpoint;
      this.router = router;
      this.track(this.serveReplays(router));
    }
    return this;
  }

  /** Keeps the next `n` batches off the PUB socket (still in the replay buffer). */
  dropNext(n: number): void {
    this.drop += n;
  }

  /** Connected but mute: batches only reach the buffer, replay requests get no answer. */
  freeze(): void {
    this.frozen = true;
  }

  thaw(): void {
    this.frozen = false;
  }

  /** Answers replay requests with an endless run of messages all numbered `seq` (endFlood stops it). */
  flood(seq: bigint): void {
    this.flooding = seq;
  }

  endFlood(): void {
    this.flooding = undefined;
  }

  /** Sends every batch again (ends dropNext). */
  stopDropping(): void {
    this.drop = 0;
  }

  get lastSeq(): bigint {
    return this.seq - 1n;
  }

  stored(key: string, parent: string | undefined, tokenIds: number[], salt: string | undefined): void {
    const h = keyHash(key);
    const last = this.pending[this.pending.length - 1];
    // a chain's next block extends the open BlockStored (one event per request step, as vLLM)
    if (
      this.o.layout !== 'sglang' &&
      parent !== undefined &&
      last?.type === 'BlockStored' &&
      last.blockHashes[last.blockHashes.length - 1] === keyHash(parent)
    ) {
      last.blockHashes.push(h);
      last.tokenIds.push(...tokenIds);
      last.extraKeys?.push(null);
    } else {
      this.queue({
        type: 'BlockStored',
        blockHashes: [h],
        parentBlockHash: parent === undefined ? null : keyHash(parent),
        tokenIds: [...tokenIds],
        blockSize: tokenIds.length,
        ...(this.o.layout === 'sglang'
          ? salt
            ? { cacheSalt: salt }
            : {}
          : { extraKeys: [parent === undefined && salt ? [salt] : null] }),
      });
    }
    this.schedule();
  }

  removed(key: string): void {
    const last = this.pending[this.pending.length - 1];
    if (last?.type === 'BlockRemoved') last.blockHashes.push(keyHash(key));
    else this.queue({ type: 'BlockRemoved', blockHashes: [keyHash(key)] });
    this.schedule();
  }

  /** One evicted radix node: its pages' hashes in one BlockRemoved (SGLang). */
  removedMany(keys: readonly string[]): void {
    if (keys.length === 0) return;
    this.queue({ type: 'BlockRemoved', blockHashes: keys.map(keyHash) });
    this.schedule();
  }

  cleared(): void {
    this.queue({ type: 'AllBlocksCleared' });
    this.schedule();
  }

  private queue(ev: OutgoingEvent): void {
    this.pending.push(ev);
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    queueMicrotask(() => this.flush());
  }

  /** One batch of everything queued since the last one. */
  private flush(): void {
    this.scheduled = false;
    if (this.pending.length === 0) return;
    const payload = (this.o.layout === 'sglang' ? encodeSglangBatch : encodeBatch)(Date.now() / 1000, this.pending, 0);
    this.pending = [];
    const seq = this.seq++;
    this.buffer.push({ seq, payload });
    if (this.buffer.length > this.o.bufferSteps) this.buffer.shift();
    this.counts.batches++;
    if (this.frozen) {
      this.counts.dropped++;
      return;
    }
    if (this.drop > 0) {
      this.drop--;
      this.counts.dropped++;
      return;
    }
    const pub = this.pub;
    if (!pub) return; // stopped: the batch only reaches the replay buffer
    const topic = Buffer.from(this.o.topic, 'utf8');
    // a socket sends one message at a time: chain them in seq order
    this.sending = this.sending.then(() => pub.send([topic, seqBytes(seq), payload]).catch(() => undefined));
  }

  private async serveReplays(router: Router): Promise<void> {
    try {
      for await (const frames of router) {
        if (frames.length !== 3) continue; // vLLM: "Invalid replay request"
        if (this.frozen) continue;
        const [id, , start] = frames;
        let from: bigint;
        try {
          from = readSeq(start);
        } catch {
          continue;
        }
        this.counts.replays++;
        if (this.flooding !== undefined) {
          this.track(this.floodTo(router, id));
          continue;
        }
        for (const b of this.buffer)
          if (b.seq >= from) await router.send([id, Buffer.alloc(0), seqBytes(b.seq), b.payload]);
        await router.send([id, Buffer.alloc(0), seqBytes(REPLAY_END_SEQ), Buffer.alloc(0)]);
      }
    } catch {
      // socket closed
    }
  }

  private async floodTo(router: Router, id: Buffer): Promise<void> {
    const payload = this.buffer[this.buffer.length - 1]?.payload ?? encodeBatch(0, [{ type: 'AllBlocksCleared' }], 0);
    try {
      for (let n = 0; this.flooding !== undefined && this.router === router; n++) {
        await router.send([id, Buffer.alloc(0), seqBytes(this.flooding), payload]);
        this.counts.flooded++;
        if (n % 256 === 255) await new Promise((r) => setImmediate(r));
      }
    } catch {
      // socket closed
    }
  }

  private track(run: Promise<void>): void {
    this.replaying.add(run);
    void run.finally(() => this.replaying.delete(run));
  }

  /** Takes both sockets down (seq and buffer kept: start() resumes on the same addresses). Each
   *  socket is closed once, never unbound: zeromq runs unbind() (like bind()) on a libuv pool thread
   *  while the main thread keeps serving the ROUTER's pending receive, and two threads in one libzmq
   *  socket abort the process (`_state == term_ack_sent || _state == term_req_sent2`, pipe.cpp)
   *  when a peer leaves meanwhile. close() runs on the main thread and rejects what is pending;
   *  the ports are released in the background (start() waits for them). */
  async stop(): Promise<void> {
    const pub = this.pub;
    const router = this.router;
    this.pub = undefined;
    this.router = undefined;
    await this.sending; // batches already handed to the PUB socket go out first
    router?.close();
    pub?.close();
    await Promise.all(this.replaying); // the replay loop and floods have seen their socket close
  }
}
