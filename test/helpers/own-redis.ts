// A redis-server of the test's own (not the shared one from global-setup), so a test can stall it
// (SIGSTOP: the connection stays up and nothing answers) without disturbing other test files.
// The process handling is bench chaos's RedisProc.
import { startRedisProc } from '../../loadtest/chaos/redis-proc.ts';

export interface OwnRedis {
  url: string;
  /** SIGSTOP: a stalled Redis (a fork, a long command, a half-open link) */
  pause(): void;
  /** SIGCONT: the stalled commands run now, in order */
  resume(): void;
  stop(): Promise<void>;
}

export async function startOwnRedis(): Promise<OwnRedis> {
  const redis = await startRedisProc();
  return {
    url: redis.url,
    pause: () => redis.signal('SIGSTOP'),
    resume: () => redis.signal('SIGCONT'),
    stop: () => redis.dispose(),
  };
}
