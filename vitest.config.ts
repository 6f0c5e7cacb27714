import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // the data tier (full recorded runs, $CTXGATE_TRAJECTORIES) runs as `npm run test:data`,
    // the agent tier (real agent CLIs) as `npm run test:agents`
    exclude: ['test/data/**', 'test/agents/**', '**/node_modules/**'],
    // A bound for a hung test, not a performance claim (benchmarks measure speed): the heaviest
    // tests (tokenising 100k-character prompts, property runs, child gateways) take ~30 s on a
    // loaded 2-core machine, and a test still fails on a hang, only later.
    testTimeout: 180_000,
    hookTimeout: 180_000,
    pool: 'forks',
    // 2-core CI machines: more workers only add contention for the tokenizer loads.
    maxWorkers: 2,
    globalSetup: ['test/global-setup.ts'],
    // property tests from a fixed seed (CTXGATE_FC_SEED to explore others)
    setupFiles: ['test/fast-check-seed.ts'],
  },
});
