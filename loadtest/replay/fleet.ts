// The replay runner's only dependency on the rest of ctxgate: start N reference workers and a
// gateway in front of them for one configuration; return URLs, per-worker counters and close().
import type { FleetFactory } from './types.ts';

export const startFleet: FleetFactory = async () => {
  throw new Error('the embedded fleet (reference workers + gateway) is not available in this build yet');
};
