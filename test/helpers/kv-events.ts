// KV event endpoints for tests: the reference publisher (PUB and replay ROUTER) on ports the
// system picks, so no two test files can race for one.
import { KvEventPublisher, type KvEventsOptions } from '../../loadtest/sim-worker/kv-event-publisher.ts';

/** Publisher options on free local ports, topic `kv-events`, 10,000 steps of replay buffer. */
export const localKvEvents = (o: Partial<KvEventsOptions> = {}): KvEventsOptions => ({
  endpoint: 'tcp://127.0.0.1:0',
  replayEndpoint: 'tcp://127.0.0.1:0',
  topic: 'kv-events',
  bufferSteps: 10_000,
  ...o,
});

/** A started publisher with localKvEvents(o). */
export const startPublisher = (o: Partial<KvEventsOptions> = {}): Promise<KvEventPublisher> =>
  new KvEventPublisher(localKvEvents(o)).start();
