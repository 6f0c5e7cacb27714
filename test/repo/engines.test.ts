// package.json's `engines.node` is honest: the running Node satisfies it, and every installed package's own
// `engines.node` admits every Node it admits (a subset), except the packages named in SAFE_ANYWAY, each with
// the reason it is safe and a test that proves it on this Node. `npm ci` prints EBADENGINE for exactly those.
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
  // Node API; its `>=22` stands for require() of an ES module, which Node has done by default since 20.19.
  cookie: 'ESM-only, loaded by require(esm) (default since Node 20.19) only through fastify.inject()',
};

interface PackageJson {
  name?: string;
  version?: string;
  engines?: { node?: string };
}
const readJson = (path: string) => JSON.parse(readFileSync(path, 'utf8')) as PackageJson;
const own = readJson(`${ROOT}package.json`);
const lock = JSON.parse(readFileSync(`${ROOT}package-lock.json`, 'utf8')) as { packages: Record<string, unknown> };

describe('engines.node', () => {
  const range = own.engines?.node ?? '';

  it('is set, and the running Node satisfies it', () => {
    expect(range).not.toBe('');
    expect(semver.satisfies(process.versions.node, range)).toBe(true);
  });

  it('admits no Node that an installed package excludes, but for those SAFE_ANYWAY names', () => {
    const excluding: string[] = [];
    for (const key of Object.keys(lock.packages)) {
      // Platform-specific optional packages of other platforms are in the lock but not on disk.
      if (!key.startsWith('node_modules/') || !existsSync(`${ROOT}${key}/package.json`)) continue;
      const pkg = readJson(`${ROOT}${key}/package.json`);
      const wants = pkg.engines?.node;
      if (wants && !semver.subset(range, wants)) excluding.push(pkg.name ?? key);
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
