import { defineConfig } from 'vitest/config';

// The data tier: tests over the full recorded runs named by $CTXGATE_TRAJECTORIES (`npm run test:data`).
// `npm test` never runs these; .ci/run does when ../shared/trajectories is present.
export default defineConfig({
  test: {
    include: ['test/data/**/*.test.ts'],
    testTimeout: 600_000,
    hookTimeout: 60_000,
    pool: 'forks',
    maxWorkers: 2,
    globalSetup: ['test/global-setup.ts'],
  },
});
