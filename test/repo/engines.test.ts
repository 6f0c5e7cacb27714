// package.json's `engines.node` is honest: the running Node satisfies it, and every installed package's own
// `engines.node` admits every Node it admits (a subset), except the packages named in SAFE_ANYWAY, each with
// the reason it is safe and a test that proves it on this Node. `npm ci` prints EBADENGINE for exactly those.
// README states the same range.
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

interface Semver {
  satisfies(version: string, range: string): boolean;
  subset(sub: string, dom: string): boolean;
}
// semver is fastify's own declared dependency; resolved from fastify so this test adds none.
const semver = createRequire(createRequire(import.meta.url).resolve('fastify'))('semver') as Semver;

/** Installed packages whose engines.node excludes a Node that ours admits, and why ctxgate runs them safely anyway. */
const SAFE_ANYWAY: Record<string, string> = {
  // light-my-request 6.8 (fastify's inject(); ctxgate never calls it) needs cookie ^2. cookie 2's code uses no
  // Node API; its `>=22` stands for require() of an ES module, which Node has done by default since 20.19 (22.12 on the 22 line, always on 24).
  cookie: 'ESM-only, loaded by require(esm) (default since Node 20.19 / 22.12) only through fastify.inject()',
};

interface PackageEntry {
  engines?: { node?: string };
  optional?: boolean;
}
const own = JSON.parse(readFileSync(`${ROOT}package.json`, 'utf8')) as PackageEntry;
const lock = JSON.parse(readFileSync(`${ROOT}package-lock.json`, 'utf8')) as { packages: Record<string, PackageEntry> };

describe('engines.node', () => {
  const range = own.engines?.node ?? '';

  it('is set, and the running Node satisfies it', () => {
    expect(range).not.toBe('');
    expect(semver.satisfies(process.versions.node, range)).toBe(true);
  });

  it("is the lock's and the README's", () => {
    expect(lock.packages['']?.engines?.node).toBe(range);
    expect(readFileSync(`${ROOT}README.md`, 'utf8')).toContain(`\`engines\`: \`${range}\``);
  });

  it('admits no Node that a package in the lock excludes, but for those SAFE_ANYWAY names', () => {
    const excluding: string[] = [];
    for (const [key, entry] of Object.entries(lock.packages)) {
      // The lock, not node_modules, so a checkout not yet re-installed tests what `npm ci` will install.
      // Optional packages of other platforms are in the lock but never installed here.
      if (!key.startsWith('node_modules/') || (entry.optional && !existsSync(`${ROOT}${key}`))) continue;
      const wants = entry.engines?.node;
      if (wants && !semver.subset(range, wants)) excluding.push(key.slice(key.lastIndexOf('node_modules/') + 13));
    }
    expect([...new Set(excluding)].sort()).toEqual(Object.keys(SAFE_ANYWAY).sort());
  });

  it('cookie 2 runs on this Node: fastify.inject() sends a cookie through light-my-request', async () => {
    const app = Fastify({ logger: false });
    app.get('/', async (req) => ({ cookie: req.headers.cookie ?? null }));
    try {
      const res = await app.inject({ method: 'GET', url: '/', cookies: { a: 'b c' } });
      expect(res.json()).toEqual({ cookie: 'a=b%20c' });
    } finally {
      await app.close();
    }
  });
});
