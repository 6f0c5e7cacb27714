// The agent tier (`npm run test:agents`): real agent CLIs, installed from npm into a cache outside
// the repository, run through ctxgate in front of reference workers. One file, agents one after
// another (2-core CI), time limits per agent inside the tests.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/agents/**/*.test.ts'],
    testTimeout: 240_000,
    hookTimeout: 60_000,
    pool: 'forks',
    maxWorkers: 1,
    fileParallelism: false,
    globalSetup: ['test/agents/setup.ts'],
  },
});
