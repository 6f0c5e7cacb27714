// Starts one real redis-server for the whole test run (tests that need Redis read
// REDIS_URL via inject('redisUrl')). Without a redis-server binary the value is '' and
// Redis tests must fail loudly rather than skip: CI installs it (.ci/run).
// The server is bench chaos's RedisProc: on a free port, checked to be ours (a port picked free
// can be taken before redis-server binds it), picked again if it was taken.
import type { TestProject } from 'vitest/node';
import { type RedisProc, startRedisProc } from '../loadtest/chaos/redis-proc.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    redisUrl: string;
    redisPort: number;
  }
}

let redis: RedisProc | undefined;

export async function setup(project: TestProject): Promise<void> {
  try {
    redis = await startRedisProc();
  } catch (err) {
    console.error(`global-setup: no redis-server for the tests (${(err as Error).message})`);
  }
  project.provide('redisUrl', redis ? redis.url : '');
  project.provide('redisPort', redis ? redis.port : 0);
}

export async function teardown(): Promise<void> {
  await redis?.dispose();
}
