// `ctxgate up`: reference workers and the gateway in one call, ready only once every worker answered,
// and the README's SDK snippet (run as written, with no key in the environment) streams an answer.
import { readFileSync } from 'node:fs';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { parseUpArgs, startLocalFleet, type LocalFleet } from '../../cli/commands/up.ts';
import { useTempDirs } from '../helpers/temp-dirs.ts';

const tempDir = useTempDirs();
const README = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');

/** The TypeScript block of "Point an agent at it". */
function readmeSnippet(): string {
  const section = README.slice(README.indexOf('## Point an agent at it'));
  const m = /```ts\n([\s\S]*?)```/.exec(section);
  if (!m) throw new Error('README: no ts snippet under "Point an agent at it"');
  return m[1];
}

describe('ctxgate up: options', () => {
  it('defaults: 2 workers, qwen3, port 8080, the README model name', () => {
    expect(parseUpArgs([])).toMatchObject({
      workers: 2,
      tokenizer: 'qwen3',
      port: 8080,
      host: '127.0.0.1',
      model: 'qwen3-32b',
      flavor: 'vllm',
    });
    expect(parseUpArgs(['--tokenizer', 'llama3_1', '--workers', '3']).model).toBe('llama-3.1-8b');
  });
  it('rejects bad values with the option name', () => {
    expect(() => parseUpArgs(['--workers', '0'])).toThrow(/--workers/);
    expect(() => parseUpArgs(['--port', 'x'])).toThrow(/--port/);
    expect(() => parseUpArgs(['--tokenizer', 'nope'])).toThrow(/--tokenizer/);
    expect(() => parseUpArgs(['--flavor', 'tgi'])).toThrow(/--flavor/);
    expect(() => parseUpArgs(['--wrokers', '2'])).toThrow();
  });
});

describe('ctxgate up: a local fleet', () => {
  let fleet: LocalFleet;
  const savedKey = process.env.CTXGATE_KEY;
  beforeAll(async () => {
    delete process.env.CTXGATE_KEY;
    fleet = await startLocalFleet({
      ...parseUpArgs(['--port', '0', '--workers', '2']),
      logger: false,
      ledgerPath: join(tempDir('up-'), 'usage.sqlite'),
    });
  });
  afterAll(async () => {
    if (savedKey !== undefined) process.env.CTXGATE_KEY = savedKey;
    await fleet?.close();
  });

  it('returns ready: every worker has passed a health check', async () => {
    const r = await fetch(`${fleet.url}/ready`);
    expect(r.status).toBe(200);
    expect(await r.json()).toEqual({
      status: 'ready',
      models: { 'qwen3-32b': { healthy: 2, workers: 2, unchecked: 0 } },
    });
  });

  it("the README's SDK snippet works as written with no key set", async () => {
    const src = readmeSnippet();
    expect(src).toContain("baseURL: 'http://127.0.0.1:8080/v1'");
    const body = src
      .replace(/^import OpenAI from 'openai';\n/m, '')
      .replace('http://127.0.0.1:8080/v1', `${fleet.url}/v1`);
    let out = '';
    const proc = { env: {}, stdout: { write: (s: string) => (out += s) } };
    const AsyncFunction = Object.getPrototypeOf(async () => undefined).constructor as new (
      ...a: string[]
    ) => (...v: unknown[]) => Promise<void>;
    await new AsyncFunction('OpenAI', 'process', body)(OpenAI, proc);
    expect(out.length).toBeGreaterThan(0);
  });

  it('routes over both workers it started', async () => {
    const r = (await (await fetch(`${fleet.url}/v1/gateway/workers`)).json()) as {
      models: { workers: { id: string; healthy: boolean }[] }[];
    };
    expect(r.models[0].workers.map((w) => [w.id, w.healthy])).toEqual([
      ['w0', true],
      ['w1', true],
    ]);
  });
});
