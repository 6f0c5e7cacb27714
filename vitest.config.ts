import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // the data tier (full recorded runs, $CTXGATE_TRAJECTORIES) runs as `npm run test:data`,
    // the agent tier (real agent CLIs) as `npm run test:agents`
    exclude: ['test/data/**', 'test/agents/**', '**/node_modules/**'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // 2-core CI machines: more workers only add contention for the tokenizer loads.
    maxWorkers: 2,
    globalSetup: ['test/global-setup.ts'],
  },
});
