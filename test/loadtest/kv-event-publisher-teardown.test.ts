// The reference worker's KV event publisher must go down and up again while its peers come and go
// without taking the process with it. zeromq runs bind()/unbind() on a libuv pool thread; an
// unbind() while the ROUTER's replay loop had a receive pending let the main thread read the same
// libzmq socket's commands as peers left, and libzmq aborted the whole process (`Assertion failed:
// _state == term_ack_sent || _state == term_req_sent2 (pipe.cpp:355)`, a vitest fork lost in CI).
// Here gateway-style DEALERs ask for replays and leave while the publisher stops, round after round;
// before the fix the process aborted within a few dozen rounds. Each round also checks that a
// restart on the same addresses answers replays again from the kept buffer.
import { Dealer } from 'zeromq';
import { describe, expect, it } from 'vitest';
import { REPLAY_END_SEQ, readSeq, seqBytes } from '../../kvplanner/kv-events/wire.ts';
import { startPublisher } from '../helpers/kv-events.ts';

const ROUNDS = 80;
const PEERS = 32;

/** One replay from 0: the sequence numbers answered before the end marker. */
async function replay(d: Dealer): Promise<bigint[]> {
  await d.send([Buffer.alloc(0), seqBytes(0n)]);
  const seqs: bigint[] = [];
  for (;;) {
    const frames = await d.receive();
    const seq = readSeq(frames[frames.length - 2]);
    if (seq === REPLAY_END_SEQ) return seqs;
    seqs.push(seq);
  }
}

describe('KV event publisher teardown', () => {
  it('stop() while replay peers leave never aborts the process; start() serves the same buffer again', async () => {
    const pub = await startPublisher({ bufferSteps: 100 });
    pub.stored(
      '1.1.16',
      undefined,
      Array.from({ length: 16 }, (_, i) => i),
      undefined,
    );
    await new Promise((r) => setImmediate(r)); // the batch is flushed in a microtask
    try {
      for (let round = 0; round < ROUNDS; round++) {
        const peers = Array.from({ length: PEERS }, () => {
          const d = new Dealer({ linger: 0, receiveTimeout: 60_000 });
          d.connect(pub.replayEndpoint!);
          return d;
        });
        const answers = await Promise.all(peers.map(replay));
        for (const a of answers) expect(a).toEqual([0n]);
        // the peers leave one by one while the publisher goes down
        let next = 0;
        const leaving = setInterval(() => {
          if (next < peers.length) peers[next++].close();
        }, 0);
        // at a different moment of the leaving each round (0-3 ms in)
        await new Promise((r) => setTimeout(r, round % 4));
        await pub.stop();
        clearInterval(leaving);
        for (const d of peers) d.close();
        await pub.start();
      }
    } finally {
      await pub.stop();
    }
    expect(pub.counts.replays).toBe(ROUNDS * PEERS);
  });
});
