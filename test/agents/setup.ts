// Global setup of the agent tier: install every pinned agent CLI into the cache outside the
// repository before any test runs, timing each; a failed install fails only that agent's test.
import type { TestProject } from 'vitest/node';
import { AGENTS, agentCacheRoot, ensureAgent } from './install.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    agentBins: Record<string, { bin?: string; error?: string; installS: number }>;
  }
}

export async function setup(project: TestProject): Promise<void> {
  const out: Record<string, { bin?: string; error?: string; installS: number }> = {};
  const root = agentCacheRoot();
  const t0 = performance.now();
  await Promise.all(
    Object.values(AGENTS).map(async (a) => {
      try {
        const r = await ensureAgent(a, root);
        out[a.id] = { bin: r.bin, installS: r.installS };
        console.log(
          `[agents] ${a.pkg}@${a.version}: ${r.installS ? `installed in ${r.installS.toFixed(1)} s` : 'cached'}`,
        );
      } catch (err) {
        out[a.id] = { error: (err as Error).message, installS: (performance.now() - t0) / 1000 };
        console.log(`[agents] ${a.pkg}@${a.version}: install FAILED`);
      }
    }),
  );
  console.log(`[agents] installs done in ${((performance.now() - t0) / 1000).toFixed(1)} s (cache: ${root})`);
  project.provide('agentBins', out);
}
