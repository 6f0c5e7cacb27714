// Guessed entries for a policy that only reads the precise index. The baselines (smg_cache_aware,
// dynamo_kv, llmd_precise), like the routers they follow, take what engines' KV events say and
// never write a precise index themselves; but in `serve` a worker is guessed until its event
// stream is in step, and again when the stream stops (KvEventIndex.guessed). For those workers
// this wrapper does what ctxgate does itself: the chain of each request routed there goes into
// that worker's entry at selection (the engine caches a prompt while prefilling it), bounded by
// the capacity KvEventIndex.guess() set (LRU). Precise workers are never written here.
// Cost: one guessed() Set lookup per decision, plus O(blocks) for a request routed to a guessed worker.
import { requestChain } from '../request-chain.ts';
import type { Choice, Policy, RouteInfo, WorkerView } from '../types.ts';
import type { KvEventIndex } from './event-index.ts';

export function withGuessedEntries(policy: Policy, events: KvEventIndex, blockSize: number): Policy {
  const wrapped: Policy = {
    get name() {
      return policy.name;
    },
    select(workers: readonly WorkerView[], info: RouteInfo): Choice | null {
      const choice = policy.select(workers, info);
      if (choice && events.guessed(choice.worker.id)) {
        const { hashes } = requestChain(info, blockSize);
        if (hashes.length > 0) events.index.insert(choice.worker.id, hashes, true);
      }
      return choice;
    },
  };
  if (policy.observe) wrapped.observe = (fb) => policy.observe!(fb);
  // a flushed or ejected worker: the policy forgets its own state; a guessed entry written here goes too
  wrapped.forgetWorker = (workerId) => {
    policy.forgetWorker?.(workerId);
    if (events.guessed(workerId)) events.index.clear(workerId);
  };
  if (policy.expectedCachedTokens)
    wrapped.expectedCachedTokens = (workers, info) => policy.expectedCachedTokens!(workers, info);
  if (policy.cachedTokensEach)
    wrapped.cachedTokensEach = (workers, info, out) => policy.cachedTokensEach!(workers, info, out);
  if (policy.stats) wrapped.stats = () => policy.stats!();
  return wrapped;
}
