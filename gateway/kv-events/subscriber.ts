// One worker's KV event stream into the model's precise index (`workers[].kv_events`). A SUB
// socket reads [topic, seq, batch] (kvplanner/kv-events/wire.ts); the engine's block hashes are
// mapped onto the gateway's own chain hashes (EngineChainMap) and applied to the KvEventIndex.
// Sequence numbers are checked batch by batch:
//   seq = last + 1      applied
//   seq > last + 1      a gap: the missed batches are asked for on the replay socket (DEALER to the
//                       engine's ROUTER, as vLLM's example subscriber does); when the replay cannot
//                       cover the gap (no replay socket, no answer within REPLAY_TIMEOUT_MS, or the
//                       engine's buffer starts later) the worker's entry is resynced: cleared and
//                       rebuilt from what comes next (blocks cached before and still held are then
//                       invisible until stored again: the index under-reports, never invents)
//   seq <= last         with a replay socket, a batch a catch-up already applied; without one, the
//                       engine restarted (its cache is empty, counting starts over): cleared
//   first batch seq > 0 joining a running engine: its buffer is replayed from 0
// Each time the SUB socket (re)connects, the replay socket is asked for everything from the last
// applied batch on: a PUB socket drops what it sends while nobody is connected, and an idle engine
// may send nothing more that would show the gap. The last applied batch must come back unchanged;
// if it does not, the engine restarted (or its buffer no longer reaches back) and the worker's
// entry starts over from the engine's whole buffer. Batches and catch-ups run one at a time.
// A worker is guessed (routing keeps its entry itself, as without events) until its stream is in
// step, and again when the stream stops: the SUB socket lost its connection, or requests went to
// the worker and no batch came for `stale_after_ms` (engines publish while they prefill). That
// fallback is logged at warn and counted; the next in-step batch makes the worker precise again,
// its entry rebuilt from everything the events said. Silence alone is no proof: a request whose
// blocks were all cached already stores nothing, and the engine publishes nothing for it. So before
// falling back for silence the replay socket is asked for everything after the last applied batch:
// an answer means the engine is alive (what it holds back is applied, a gap recovered), and only
// no answer within REPLAY_TIMEOUT_MS is a fallback. A replay ends at the first message at or past
// the range asked for; one that answers more than MAX_REPLAY_BATCHES messages (in range or not),
// MAX_REPLAY_BYTES of payload or runs past REPLAY_DEADLINE_MS failed, like no answer (a broken
// publisher must not hold the feed's queue and the event loop). Cost per batch: O(events + stored blocks).
import { Dealer, Subscriber } from 'zeromq';
import { EngineChainMap } from '../../kvplanner/kv-events/chain-map.ts';
import type { KvEventIndex } from '../../kvplanner/kv-events/event-index.ts';
import { CTXGATE_DEFAULTS } from '../../kvplanner/policies/ctxgate.ts';
import { decodeBatch, type KvEventBatch, readSeq, REPLAY_END_SEQ, seqBytes } from '../../kvplanner/kv-events/wire.ts';
import type { WorkerConfig } from '../config/schema.ts';
import type { GatewayMetrics } from '../metrics.ts';
import type { ModelRoute } from '../upstream/fleet.ts';
import type { Worker } from '../upstream/worker.ts';

/** Longest wait for the replay socket's next message. */
export const REPLAY_TIMEOUT_MS = 1_000;
/** Largest KV event message read (ZeroMQ drops the connection on a bigger one). */
const MAX_MESSAGE_BYTES = 64 * 1024 * 1024;
/** Most messages one replay may answer (in range or not) before it counts as failed. */
const MAX_REPLAY_BATCHES = 100_000;
/** Most payload bytes one replay may answer before it counts as failed (each kept one is decoded). */
const MAX_REPLAY_BYTES = 256 * 1024 * 1024;
/** Longest a whole replay may take, however steadily the engine answers. */
export const REPLAY_DEADLINE_MS = 10_000;
/** The chain map may hold this many times the worker's KV capacity in blocks. */
const MAP_CAPACITY_FACTOR = 2;
/** Staleness checks per stale_after_ms. */
const CHECKS_PER_WINDOW = 4;

export interface KvFeedLog {
  warn(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
}

class Overrun extends Error {}

interface Replayed {
  seq: bigint;
  payload: Uint8Array;
  batch: KvEventBatch;
}

export type KvFeedState = 'joining' | 'precise' | 'guessed';

export class WorkerKvFeed {
  readonly map: EngineChainMap;
  state: KvFeedState = 'joining';
  /** last applied sequence number */
  lastSeq: bigint | undefined;
  private sub: Subscriber | undefined;
  private dealer: Dealer | undefined;
  private timer: NodeJS.Timeout | undefined;
  private connected = false;
  /** worker.requestsStarted when the last batch came, and when more were first seen since */
  private startedMark = 0;
  private waitingSince: number | undefined;
  private stopped = false;
  /** a liveness probe (a replay request) is under way */
  private probing = false;
  /** the last applied batch's bytes (a catch-up checks the engine still has it) */
  private lastPayload: Uint8Array | undefined;
  /** receive / catch-up steps, one at a time in arrival order */
  private work: Promise<void> = Promise.resolve();

  constructor(
    readonly model: string,
    private readonly worker: Worker,
    private readonly cfg: NonNullable<WorkerConfig['kv_events']>,
    private readonly index: KvEventIndex,
    blockSize: number,
    private readonly metrics: GatewayMetrics,
    private readonly log: KvFeedLog,
  ) {
    this.labels = { model, worker: worker.id };
    this.capacityBlocks = Math.floor((worker.kvTokens ?? CTXGATE_DEFAULTS.default_kv_tokens) / blockSize);
    this.map = new EngineChainMap(blockSize, this.capacityBlocks * MAP_CAPACITY_FACTOR);
  }

  private readonly labels: { model: string; worker: string };
  private readonly capacityBlocks: number;

  start(): this {
    this.metrics.kvIndexPrecise.set(this.labels, 0);
    const sub = new Subscriber({ linger: 0, maxMessageSize: MAX_MESSAGE_BYTES });
    sub.events.on('handshake', () => {
      this.connected = true;
      if (this.cfg.replay_endpoint)
        void this.enqueue(async () => {
          await this.catchUp();
        });
    });
    sub.events.on('disconnect', () => {
      this.connected = false;
      if (!this.stopped) this.fallBack('disconnected');
    });
    sub.connect(this.cfg.endpoint);
    sub.subscribe(this.cfg.topic);
    this.sub = sub;
    void this.run(sub);
    const every = Math.max(10, Math.floor(this.cfg.stale_after_ms / CHECKS_PER_WINDOW));
    this.timer = setInterval(() => this.checkStale(Date.now()), every);
    this.timer.unref();
    return this;
  }

  private async run(sub: Subscriber): Promise<void> {
    try {
      for await (const frames of sub) {
        if (frames.length !== 3) {
          this.metrics.kvEventBatches.inc({ ...this.labels, outcome: 'undecodable' });
          continue;
        }
        const [, seq, payload] = frames;
        await this.enqueue(async () => {
          try {
            await this.receive(readSeq(seq), payload);
          } catch (err) {
            this.metrics.kvEventBatches.inc({ ...this.labels, outcome: 'undecodable' });
            this.log.warn({ ...this.labels, err: (err as Error).message }, 'undecodable KV event batch skipped');
          }
        });
      }
    } catch (err) {
      if (!this.stopped) this.log.warn({ ...this.labels, err: (err as Error).message }, 'KV event socket failed');
    }
  }

  private enqueue(step: () => Promise<void>): Promise<void> {
    this.work = this.work.then(step, step);
    return this.work;
  }

  /** After a (re)connect: whatever the engine published since the last applied batch. Returns
   *  whether the engine answered. */
  private async catchUp(): Promise<boolean> {
    if (this.stopped) return false;
    const last = this.lastSeq;
    const got = await this.replay(last ?? 0n);
    if (got === undefined) return false; // no answer: the next live batch will tell
    let batches = got;
    if (last !== undefined) {
      const same =
        got[0]?.seq === last &&
        this.lastPayload !== undefined &&
        Buffer.compare(got[0].payload, this.lastPayload) === 0;
      if (same) {
        batches = got.slice(1);
        if (batches.length) this.metrics.kvEventGaps.inc({ ...this.labels, recovery: 'replay' });
      } else {
        this.resync();
        this.metrics.kvEventGaps.inc({ ...this.labels, recovery: 'resync' });
        this.log.warn(
          { ...this.labels, lastSeq: String(last) },
          'KV event stream does not continue the last batch (engine restarted or buffer passed): worker index resynced',
        );
        batches = got[0]?.seq === 0n ? got : ((await this.replay(0n)) ?? []);
      }
    }
    for (const b of batches) {
      this.apply(b.seq, b.batch, b.payload);
      this.metrics.kvEventBatches.inc({ ...this.labels, outcome: 'replayed' });
    }
    // the engine answered: what it published is applied (nothing at all: its cache is empty)
    if (this.state !== 'precise') this.becomePrecise();
    return true;
  }

  /** Silence past stale_after_ms: the engine is alive if its replay socket answers. */
  private async probe(): Promise<void> {
    if (this.stopped || this.state !== 'precise') return;
    if (!(await this.catchUp())) {
      this.fallBack('silent');
      return;
    }
    this.startedMark = this.worker.requestsStarted;
    this.waitingSince = undefined;
  }

  /** One batch off the SUB socket, in arrival order. */
  async receive(seq: bigint, payload: Uint8Array): Promise<void> {
    const batch = decodeBatch(payload);
    const last = this.lastSeq;
    if (last !== undefined && seq <= last && this.cfg.replay_endpoint) return; // a catch-up applied it
    if (last !== undefined && seq <= last) {
      // counting started over: a new engine process with an empty cache
      this.resync();
      if (seq > 0n) await this.recover(0n, seq);
    } else if (last === undefined && seq > 0n) await this.recover(0n, seq);
    else if (last !== undefined && seq > last + 1n) await this.recover(last + 1n, seq);
    this.apply(seq, batch, payload);
    this.metrics.kvEventBatches.inc({ ...this.labels, outcome: 'applied' });
    if (this.state !== 'precise') this.becomePrecise();
  }

  /** Batches [from, upTo) from the replay socket; a resync when they do not all come. */
  private async recover(from: bigint, upTo: bigint): Promise<void> {
    const joining = this.lastSeq === undefined && from === 0n;
    const got = this.cfg.replay_endpoint ? await this.replay(from, upTo) : undefined;
    const complete = got !== undefined && got.length === Number(upTo - from) && got[0]?.seq === from;
    if (complete) {
      for (const b of got) {
        this.apply(b.seq, b.batch, b.payload);
        this.metrics.kvEventBatches.inc({ ...this.labels, outcome: 'replayed' });
      }
      if (!joining) this.metrics.kvEventGaps.inc({ ...this.labels, recovery: 'replay' });
      return;
    }
    // what the engine still has is applied anyway: blocks whose parents it lacks stay unmapped
    if (!joining) {
      this.resync();
      this.metrics.kvEventGaps.inc({ ...this.labels, recovery: 'resync' });
      this.log.warn(
        { ...this.labels, from: String(from), to: String(upTo - 1n), replayed: got?.length ?? 0 },
        'KV event gap the replay could not cover: worker index resynced',
      );
    }
    for (const b of got ?? []) this.apply(b.seq, b.batch, b.payload);
  }

  /** Asks the engine's ROUTER for batches from `from` on; collects those before `upTo`. A replay
   *  that answers more messages, bytes or time than its budget failed (a broken publisher, or
   *  another process on that socket, must not hold the feed's queue and the event loop forever). */
  private async replay(from: bigint, upTo?: bigint): Promise<Replayed[] | undefined> {
    if (this.stopped) return undefined; // a step queued before stop() opens no socket after it
    if (!this.dealer) {
      this.dealer = new Dealer({ linger: 0, receiveTimeout: REPLAY_TIMEOUT_MS, maxMessageSize: MAX_MESSAGE_BYTES });
      this.dealer.connect(this.cfg.replay_endpoint!);
    }
    const dealer = this.dealer;
    const out: Replayed[] = [];
    const deadline = Date.now() + REPLAY_DEADLINE_MS;
    let messages = 0;
    let bytes = 0;
    try {
      await dealer.send([Buffer.alloc(0), seqBytes(from)]);
      for (;;) {
        const frames = await dealer.receive();
        const seq = readSeq(frames[frames.length - 2]);
        const payload = frames[frames.length - 1];
        if (seq === REPLAY_END_SEQ || payload.length === 0) break;
        messages++;
        bytes += payload.length;
        if (messages > MAX_REPLAY_BATCHES || bytes > MAX_REPLAY_BYTES || Date.now() > deadline) {
          this.metrics.kvEventBatches.inc({ ...this.labels, outcome: 'replay_overrun' });
          throw new Overrun(`replay past its budget (${messages} messages, ${bytes} bytes)`);
        }
        // batches come in seq order: one at or past the end closes what was asked for
        if (upTo !== undefined && seq >= upTo) break;
        if (seq >= from) out.push({ seq, payload, batch: decodeBatch(payload) });
      }
      if (upTo !== undefined) this.closeDealer(); // answers after the end must not reach the next replay
      return out;
    } catch (err) {
      // a late answer must not be read as the next replay's: start that one on a fresh socket
      this.closeDealer();
      if (this.stopped) return undefined; // stop() closed the socket under it
      this.log.warn({ ...this.labels, err: (err as Error).message }, 'KV event replay failed');
      if (err instanceof Overrun) return undefined;
      return out.length ? out : undefined;
    }
  }

  private closeDealer(): void {
    this.dealer?.close();
    this.dealer = undefined;
  }

  private apply(seq: bigint, batch: KvEventBatch, payload: Uint8Array): void {
    const id = this.worker.id;
    for (const ev of batch.events) {
      const r = this.map.apply(ev);
      if (r.cleared) this.index.allCleared(id);
      if (r.stored?.length) this.index.blockStored(id, r.stored);
      if (r.removed?.length) this.index.blockRemoved(id, r.removed);
    }
    this.lastSeq = seq;
    this.lastPayload = payload;
    this.startedMark = this.worker.requestsStarted;
    this.waitingSince = undefined;
  }

  /** The worker's index starts over from the next batch (the map with it). */
  private resync(): void {
    this.map.clear();
    this.index.allCleared(this.worker.id);
    this.lastSeq = undefined;
    this.lastPayload = undefined;
  }

  private becomePrecise(): void {
    const was = this.state;
    this.state = 'precise';
    this.index.precise(this.worker.id, this.map.blocks());
    this.metrics.kvIndexPrecise.set(this.labels, 1);
    if (was === 'guessed') this.log.info({ ...this.labels }, 'KV events in step again: routing on the worker’s cache');
  }

  private fallBack(reason: 'disconnected' | 'silent'): void {
    if (this.state !== 'precise') return;
    this.state = 'guessed';
    this.index.guess(this.worker.id, this.capacityBlocks);
    this.metrics.kvIndexPrecise.set(this.labels, 0);
    this.metrics.kvEventFallbacks.inc({ ...this.labels, reason });
    this.log.warn(
      { ...this.labels, reason, lastSeq: this.lastSeq === undefined ? null : String(this.lastSeq) },
      'KV events stopped: routing on the approximate index for this worker',
    );
  }

  /** Requests went to the worker and no batch came for stale_after_ms: its events stopped, unless
   *  the replay socket still answers (probe()). */
  checkStale(now: number): void {
    if (this.state !== 'precise') return;
    if (this.worker.requestsStarted === this.startedMark) return;
    if (this.probing) return;
    if (this.waitingSince === undefined) this.waitingSince = now;
    else if (now - this.waitingSince >= this.cfg.stale_after_ms) {
      if (!this.cfg.replay_endpoint) {
        this.fallBack('silent');
        return;
      }
      this.probing = true;
      void this.enqueue(() => this.probe()).finally(() => {
        this.probing = false;
      });
    }
  }

  get isConnected(): boolean {
    return this.connected;
  }

  /** Closes both sockets, once each. Every socket call here is on the main thread (connect, never
   *  bind/unbind, which zeromq runs on a pool thread): close() rejects a pending receive or send
   *  (the receive loop ends, a replay in flight fails quietly), so an engine that restarts or
   *  vanishes at any moment cannot put two threads in one libzmq socket. */
  stop(): void {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.sub?.close();
    this.sub = undefined;
    this.closeDealer();
  }
}

/** A feed per worker of `route` that has `kv_events` (none without a precise index). */
export function startKvFeeds(route: ModelRoute, metrics: GatewayMetrics, log: KvFeedLog): WorkerKvFeed[] {
  const index = route.kvIndex;
  if (!index) return [];
  const feeds: WorkerKvFeed[] = [];
  route.config.workers.forEach((cfg, i) => {
    if (!cfg.kv_events) return;
    const w = route.workers[i];
    feeds.push(
      new WorkerKvFeed(route.config.name, w, cfg.kv_events, index, route.config.block_size, metrics, log).start(),
    );
  });
  return feeds;
}
