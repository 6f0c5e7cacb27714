import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, parseConfig } from '../../gateway/config/load.ts';
import { DEFAULT_ATTEMPTS, DEFAULT_LAYOUT, DEFAULT_MAX_BODY_BYTES } from '../../gateway/config/schema.ts';
import { run as serve } from '../../cli/commands/serve.ts';

const worker = { url: 'http://127.0.0.1:9001' };
const model = { name: 'm', workers: [worker] };
const errorOf = (raw: unknown, env: NodeJS.ProcessEnv = {}): ConfigError => {
  try {
    parseConfig(raw, 'cfg.yaml', env);
  } catch (e) {
    if (e instanceof ConfigError) return e;
    throw e;
  }
  throw new Error('expected a ConfigError');
};

describe('config', () => {
  it('loads the minimal YAML shape with defaults and deep-freezes it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ctxgate-cfg-'));
    const file = join(dir, 'c.yaml');
    writeFileSync(
      file,
      `listen: { host: 127.0.0.1, port: 8080 }
auth: { mode: none }
models:
  - name: qwen3-32b
    tokenizer: qwen3
    workers: [ { url: "http://127.0.0.1:9001" }, { url: "http://127.0.0.1:9002" } ]
`,
    );
    const c = loadConfig(file);
    expect(c.models[0].layout).toBe(DEFAULT_LAYOUT);
    expect(c.models[0].policy).toBe('round_robin');
    expect(c.upstream.attempts).toBe(DEFAULT_ATTEMPTS);
    expect(c.limits.max_body_bytes).toBe(DEFAULT_MAX_BODY_BYTES);
    expect(c.models[0].workers[1].id).toBe('w1'); // tenants see ids, never the address
    expect(Object.isFrozen(c.models[0].workers[0])).toBe(true);
    expect(() => {
      (c.listen as { port: number }).port = 1;
    }).toThrow();
  });

  it.each([
    [{ models: [{ name: 'm', workers: [{ url: 42 }] }] }, 'models[0].workers[0].url', '42'],
    [{ models: [{ ...model, policy: 'nope' }] }, 'models[0].policy', '"nope"'],
    [{ models: [{ ...model, layout: 'fancy' }] }, 'models[0].layout', '"fancy"'],
    [{ models: [model], upstream: { attempts: 0 } }, 'upstream.attempts', '0'],
    [
      { models: [model], auth: { mode: 'keys', keys: [{ key: 'plaintext', tenant: 't' }] } },
      'auth.keys[0].key',
      '"plaintext"',
    ],
    [
      { models: [model], auth: { mode: 'keys', keys: [{ key: 'env:MISSING_KEY', tenant: 't' }] } },
      'auth.keys[0].key',
      'env:MISSING_KEY',
    ],
    [{ models: [model], auth: { mode: 'open' } }, 'auth.mode', '"open"'],
    [{ models: [model, model] }, 'models[1].name', '"m"'],
    [{ models: [] }, 'models', '[]'],
  ])('names the field and the bad value: %#', (raw, path, value) => {
    const e = errorOf(raw);
    expect(e.path).toBe(path);
    expect(e.message).toContain(path);
    expect(e.message).toContain(value);
    expect(e.message).toContain('cfg.yaml');
  });

  it('rejects unknown fields', () => {
    const e = errorOf({ models: [model], listne: {} });
    expect(e.message).toMatch(/listne|additional/i);
  });

  it('a tenant id with a control character fails at load, naming the field', () => {
    const key = { key: `sha256:${'a'.repeat(64)}`, tenant: 'acme\u0000x' };
    const e = errorOf({ models: [model], auth: { mode: 'keys', keys: [key] } });
    expect(e).toBeInstanceOf(ConfigError);
    expect(e.message).toContain('auth.keys[0].tenant');
    for (const bad of ['a\nb', 'a\u007fb', '\t'])
      expect(errorOf({ models: [model], auth: { mode: 'keys', keys: [{ ...key, tenant: bad }] } }), bad).toBeInstanceOf(
        ConfigError,
      );
    const ok = parseConfig({ models: [model], auth: { mode: 'keys', keys: [{ ...key, tenant: 'acme-ü 1' }] } });
    expect(ok.auth.mode).toBe('keys');
  });

  it('kv_events: index_stride other than 1 and a tcp endpoint without a port fail at load, naming the field', () => {
    const kvModel = (po: Record<string, unknown>, endpoint = 'tcp://127.0.0.1:5557') => ({
      name: 'm',
      tokenizer: 'qwen3',
      policy: 'ctxgate',
      policy_options: po,
      workers: [{ url: 'http://127.0.0.1:9', kv_events: { endpoint } }],
    });
    const stride = errorOf({ models: [kvModel({ index_stride: 4 })] });
    expect(stride).toBeInstanceOf(ConfigError);
    expect(stride.message).toContain('index_stride');
    expect(stride.message).toMatch(/must be 1/);
    // stride 1 (or the fleet's own default) with kv_events, and stride 4 without, still load
    expect(parseConfig({ models: [kvModel({ index_stride: 1 })] }).models).toHaveLength(1);
    expect(parseConfig({ models: [kvModel({})] }).models).toHaveLength(1);
    const plain = { ...kvModel({ index_stride: 4 }), workers: [{ url: 'http://127.0.0.1:9' }] };
    expect(parseConfig({ models: [plain] }).models).toHaveLength(1);
    for (const bad of ['tcp://127.0.0.1', 'tcp://host', 'udp://h:1']) {
      const e = errorOf({ models: [kvModel({}, bad)] });
      expect(e, bad).toBeInstanceOf(ConfigError);
      expect(e.message, bad).toMatch(/kv_events.*endpoint|endpoint/);
    }
    for (const ok of ['tcp://127.0.0.1:5557', 'tcp://[::1]:5557', 'ipc:///tmp/kv.sock'])
      expect(parseConfig({ models: [kvModel({}, ok)] }).models, ok).toHaveLength(1);
  });

  it('loads every example config', () => {
    const env = { CTXGATE_ADMIN_KEY: 'a', CTXGATE_TEAM_KEY: 'b', VLLM_API_KEY: 'c' };
    for (const f of ['embedded', 'vllm', 'sglang']) {
      const c = loadConfig(`configs/${f}.yaml`, env);
      expect(c.models.length).toBeGreaterThan(0);
    }
  });

  it('serve exits 2 with the field path on a bad config', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ctxgate-cfg-'));
    const file = join(dir, 'bad.yaml');
    writeFileSync(file, 'models: [ { name: m, workers: [ { url: "ftp://x" } ] } ]\n');
    const chunks: string[] = [];
    const orig = process.stderr.write.bind(process.stderr);
    process.stderr.write = ((s: string) => {
      chunks.push(s);
      return true;
    }) as typeof process.stderr.write;
    try {
      expect(await serve(['--config', file])).toBe(2);
    } finally {
      process.stderr.write = orig;
    }
    expect(chunks.join('')).toContain('models[0].workers[0].url');
  });
});

describe('block_size reaches the routing policy', () => {
  it("the model's block_size is the ctxgate policy's unless policy_options names one", async () => {
    const { parseConfig } = await import('../../gateway/config/load.ts');
    const { createFleet } = await import('../../gateway/upstream/fleet.ts');
    const { createMetrics } = await import('../../gateway/metrics.ts');
    const { Registry } = await import('prom-client');
    const model = (extra: object) => ({
      name: 'm',
      policy: 'ctxgate',
      block_size: 32,
      workers: [{ url: 'http://127.0.0.1:1' }],
      ...extra,
    });
    const blockSizeOf = (extra: object) => {
      const cfg = parseConfig({ models: [model(extra)] }, 'test');
      const fleet = createFleet(cfg, createMetrics(new Registry(), { defaultMetrics: false }));
      return (fleet.get('m')!.policy as unknown as { blockSize: number }).blockSize;
    };
    expect(blockSizeOf({})).toBe(32);
    expect(blockSizeOf({ policy_options: { block_size: 64 } })).toBe(64);
  });

  it("the model's flavor reaches ctxgate: in front of SGLang its index remembers 8 × the KV, else 4 ×", async () => {
    const { parseConfig } = await import('../../gateway/config/load.ts');
    const { createFleet } = await import('../../gateway/upstream/fleet.ts');
    const { createMetrics } = await import('../../gateway/metrics.ts');
    const { Registry } = await import('prom-client');
    const factorOf = (extra: object) => {
      const cfg = parseConfig(
        { models: [{ name: 'm', policy: 'ctxgate', workers: [{ url: 'http://127.0.0.1:1' }], ...extra }] },
        'test',
      );
      const fleet = createFleet(cfg, createMetrics(new Registry(), { defaultMetrics: false }));
      return (fleet.get('m')!.policy as unknown as { indexFactor: number }).indexFactor;
    };
    expect(factorOf({})).toBe(4);
    expect(factorOf({ flavor: 'vllm' })).toBe(4);
    expect(factorOf({ flavor: 'sglang' })).toBe(8);
    expect(factorOf({ flavor: 'sglang', policy_options: { index_capacity_factor: 3 } })).toBe(3);
  });
});

describe('transforms', () => {
  it('an unknown stage name is rejected at load with its field path', async () => {
    const { parseConfig } = await import('../../gateway/config/load.ts');
    const base = { name: 'm', workers: [{ url: 'http://127.0.0.1:1' }] };
    expect(() =>
      parseConfig({ models: [{ ...base, transforms: { volatile: 'eager', ledger: false } }] }, 'test'),
    ).not.toThrow();
    expect(() => parseConfig({ models: [{ ...base, transforms: { volatlie: false } }] }, 'test')).toThrow(
      /models\[0\]\.transforms/,
    );
  });
});

describe('workers[].kv_events', () => {
  const kv = { endpoint: 'tcp://10.0.0.5:5557', replay_endpoint: 'tcp://10.0.0.5:5558', topic: 'kv-events' };
  const withKv = (extra: Record<string, unknown>, kvEvents: unknown = kv) => ({
    models: [
      { name: 'm', tokenizer: 'qwen3', policy: 'ctxgate', ...extra, workers: [{ ...worker, kv_events: kvEvents }] },
    ],
  });

  it('validates, fills defaults, and hands ctxgate a precise index with stride 1', async () => {
    const c = parseConfig(withKv({}), 'test');
    expect(c.models[0].workers[0].kv_events).toEqual({ ...kv, stale_after_ms: 5000 });
    const { createFleet } = await import('../../gateway/upstream/fleet.ts');
    const { createMetrics } = await import('../../gateway/metrics.ts');
    const { Registry } = await import('prom-client');
    const route = createFleet(c, createMetrics(new Registry())).get('m')!;
    expect(route.kvIndex).toBeDefined();
    // guessed until the worker's stream is in step
    expect(route.kvIndex!.guessed('w0')).toBe(true);
  });

  it('the baselines with a block index take it too; one without an index does not', () => {
    for (const policy of ['smg_cache_aware', 'dynamo_kv', 'llmd_precise'])
      expect(parseConfig(withKv({ policy }), 'test').models[0].policy).toBe(policy);
    expect(errorOf(withKv({ policy: 'session_hash' })).message).toMatch(
      /kv_events.*reads a block index.*dynamo_kv.*'session_hash'/,
    );
  });

  it('names the field: another policy, no tokenizer, a bad endpoint, an unknown key', () => {
    expect(errorOf(withKv({ policy: 'round_robin' })).message).toMatch(/models\[0\]\.workers\[0\]\.kv_events.*ctxgate/);
    expect(errorOf(withKv({ tokenizer: undefined })).message).toMatch(/workers\[0\]\.kv_events.*tokenizer/);
    expect(errorOf(withKv({}, { endpoint: 'http://x:1' })).message).toMatch(/kv_events\.endpoint/);
    expect(errorOf(withKv({}, { ...kv, stale_after_ms: 0 })).message).toMatch(/kv_events\.stale_after_ms/);
    expect(errorOf(withKv({}, { ...kv, topik: 'x' })).message).toMatch(/kv_events/);
  });
});

describe('policy options are checked at load', () => {
  it('a bad value or an unknown option fails with its field path, not at the first request', async () => {
    const { parseConfig, ConfigError } = await import('../../gateway/config/load.ts');
    const cfg = (policy: string, policy_options: object) => ({
      models: [{ name: 'm', policy, policy_options, workers: [{ url: 'http://127.0.0.1:1' }] }],
    });
    const err = (policy: string, o: object): ConfigError => {
      try {
        parseConfig(cfg(policy, o), 'c.yaml');
      } catch (e) {
        return e as ConfigError;
      }
      throw new Error('accepted');
    };
    const low = err('prefix_hash', { load_factor: 0.5 });
    expect(low).toBeInstanceOf(ConfigError);
    expect(low.path).toBe('models[0].policy_options.load_factor');
    expect(low.message).toContain('must be a number >= 1 (got 0.5)');
    expect(err('prefix_hash', { lod_factor: 2 }).message).toMatch(
      /policy_options\.lod_factor: not an option of policy 'prefix_hash' \(known: load_factor, /,
    );
    expect(err('round_robin', { x: 1 }).message).toContain("not an option of policy 'round_robin' (it takes none)");
    expect(err('ctxgate', { prefill_tokens_per_s: { w0: -1 } }).path).toBe(
      'models[0].policy_options.prefill_tokens_per_s.w0',
    );
    expect(err('sglang_cache_aware', { cache_threshold: 2 }).message).toContain('must be a number in [0, 1]');
    // a huge session TTL would make Redis refuse the shared home's expiry (EX Infinity): sessions silently unshared
    const ttl = err('ctxgate', { session_ttl_s: 1e308 });
    expect(ttl.path).toBe('models[0].policy_options.session_ttl_s');
    expect(ttl.message).toContain('must be a number in [1, 2592000]');
    expect(parseConfig(cfg('ctxgate', { sticky_slack: 2, kv_pressure_s: 0 }), 'c.yaml').models[0].policy).toBe(
      'ctxgate',
    );
  });
});
