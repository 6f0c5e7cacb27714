// Loads the YAML config, applies defaults, validates it against the one schema and deep-freezes
// the result. Errors name the field path and the bad value. Client keys given as `env:NAME` are
// hashed here, so the running gateway never holds a plaintext client key.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Value } from '@sinclair/typebox/value';
import { parse as parseYaml } from 'yaml';
import { DEFAULT_DISPATCH_BY_ENGINE } from '../../kvplanner/admission/admission-defaults.ts';
import { checkPolicyOptions, POLICY_NAMES, readsKvIndex } from '../../kvplanner/policy-registry.ts';
import { AuthSchema, ConfigSchema, DEFAULT_ADMISSION_SCRAPE_MS, type GatewayConfig } from './schema.ts';

export class ConfigError extends Error {
  constructor(
    readonly path: string,
    message: string,
  ) {
    super(message);
  }
}

/** `/models/0/workers/1/url` -> `models[0].workers[1].url` */
function fieldPath(pointer: string): string {
  const parts = pointer.split('/').filter(Boolean);
  let out = '';
  for (const p of parts) out += /^\d+$/.test(p) ? `[${p}]` : out ? `.${p}` : p;
  return out || '(root)';
}

function show(v: unknown): string {
  const s = v === undefined ? 'undefined' : JSON.stringify(v);
  return s.length > 80 ? s.slice(0, 77) + '...' : s;
}

function fail(pointer: string, message: string, value: unknown, source: string): never {
  const path = fieldPath(pointer);
  throw new ConfigError(path, `${source}: invalid config at ${path}: ${message} (got ${show(value)})`);
}

function firstError(schema: Parameters<typeof Value.Errors>[0], value: unknown, prefix: string, source: string): void {
  const first = Value.Errors(schema, value).First();
  if (first) fail(prefix + first.path, first.message, first.value, source);
}

export function sha256Hex(s: string): string {
  return createHash('sha256').update(s, 'utf8').digest('hex');
}

function deepFreeze<T>(o: T): T {
  if (o && typeof o === 'object' && !Object.isFrozen(o)) {
    Object.freeze(o);
    for (const v of Object.values(o)) deepFreeze(v);
  }
  return o;
}

/** Validates an already-parsed config object (tests build configs in code). Returns a frozen copy. */
export function parseConfig(raw: unknown, source = 'config', env: NodeJS.ProcessEnv = process.env): GatewayConfig {
  if (!raw || typeof raw !== 'object' || Array.isArray(raw))
    fail('', 'expected a mapping at the top level', raw, source);
  const cfg = Value.Default(ConfigSchema, structuredClone(raw)) as Record<string, unknown>;
  // The auth union would only report "expected union value"; validate the chosen variant instead.
  const auth = cfg.auth as { mode?: unknown } | undefined;
  if (auth && typeof auth === 'object') {
    const variant = AuthSchema.anyOf.find((s) => s.properties.mode.const === auth.mode);
    if (!variant) fail('/auth/mode', "expected 'none' or 'keys'", auth.mode, source);
    Value.Default(variant, auth);
    firstError(variant, auth, '/auth', source);
  }
  firstError(ConfigSchema, cfg, '', source);
  const config = cfg as unknown as GatewayConfig;

  const policies = POLICY_NAMES();
  const names = new Set<string>();
  config.models.forEach((m, i) => {
    if (names.has(m.name)) fail(`/models/${i}/name`, 'duplicate model name', m.name, source);
    names.add(m.name);
    if (!policies.includes(m.policy))
      fail(`/models/${i}/policy`, `unknown policy (known: ${policies.join(', ')})`, m.policy, source);
    // Policy options are checked here, against the policy itself, not at the first request.
    const bad = checkPolicyOptions(
      m.policy,
      { block_size: m.block_size, ...m.policy_options },
      Object.keys(m.policy_options),
    );
    if (bad) {
      const keys = bad.key ? bad.key.split('.') : [];
      const value = keys.reduce<unknown>((o, k) => (o as Record<string, unknown> | undefined)?.[k], m.policy_options);
      fail(['', 'models', i, 'policy_options', ...keys].join('/'), bad.message, value, source);
    }
    // late binding by default where it wins (vLLM), with the engine signals it admits by; an
    // explicit scrape_metrics_ms: 0 (no signals) keeps arrival unless admission is asked for
    const scrapeSet = (raw as { models?: Array<{ scrape_metrics_ms?: unknown }> }).models?.[i]?.scrape_metrics_ms;
    if (m.dispatch === undefined) {
      const d = DEFAULT_DISPATCH_BY_ENGINE[m.flavor ?? 'vllm'];
      m.dispatch = d === 'admission' && scrapeSet !== undefined && m.scrape_metrics_ms === 0 ? 'arrival' : d;
    }
    if (m.dispatch === 'admission' && scrapeSet === undefined) m.scrape_metrics_ms = DEFAULT_ADMISSION_SCRAPE_MS;
    // late binding reads the engines' waiting and KV usage: without scraping every worker looks able
    // and the gate would never hold a call
    if (m.dispatch === 'admission' && m.scrape_metrics_ms === 0)
      fail(
        `/models/${i}/scrape_metrics_ms`,
        'dispatch admission needs the engine signals: set scrape_metrics_ms above 0',
        m.scrape_metrics_ms,
        source,
      );
    // SGLang orders its own waiting queue by prefix match: holding calls at the gateway takes that
    // choice away (fleet simulator, virtual time, conversation half, 8 workers, x1: ctxgate p90
    // 151.9 s at arrival, 266.0 s with admission)
    if (m.dispatch === 'admission' && m.flavor === 'sglang')
      fail(
        `/models/${i}/dispatch`,
        "admission is for vLLM engines (SGLang's own prefix-ordered queue does better unheld): use arrival",
        m.dispatch,
        source,
      );
    // a precise (KV event) index is exact per block: the fleet sets stride 1, an explicit other one cannot work
    const stride = (m.policy_options as Record<string, unknown>).index_stride;
    if (m.workers.some((w) => w.kv_events) && stride !== undefined && Math.floor(Number(stride)) !== 1)
      fail(
        `/models/${i}/policy_options/index_stride`,
        'must be 1 when a worker has kv_events (the precise index is exact per block)',
        stride,
        source,
      );
    const ids = new Set<string>();
    m.workers.forEach((w, j) => {
      // Tenants see worker ids (x-ctxgate-worker, records, reports): never default to the address.
      w.id ??= `w${j}`;
      if (ids.has(w.id)) fail(`/models/${i}/workers/${j}/id`, 'duplicate worker id in this model', w.id, source);
      ids.add(w.id);
      w.max_in_flight ??= config.upstream.max_in_flight;
      // a policy with a block index reads the precise one (the others would never look at it)
      if (w.kv_events && !readsKvIndex(m.policy))
        fail(
          `/models/${i}/workers/${j}/kv_events`,
          `needs a policy that reads a block index (${POLICY_NAMES().filter(readsKvIndex).join(', ')}); the model's is '${m.policy}'`,
          m.policy,
          source,
        );
      if (w.kv_events && !m.tokenizer)
        fail(
          `/models/${i}/workers/${j}/kv_events`,
          'needs the model’s tokenizer (the index is keyed by token block hashes)',
          undefined,
          source,
        );
      if (w.api_key?.startsWith('env:')) {
        const name = w.api_key.slice(4);
        const v = env[name];
        if (v === undefined)
          fail(`/models/${i}/workers/${j}/api_key`, `environment variable ${name} is not set`, w.api_key, source);
        w.api_key = v;
      }
    });
  });

  const secret = config.tenancy.cache_salt_secret;
  if (secret?.startsWith('env:')) {
    const v = env[secret.slice(4)];
    if (!v || v.length < 16)
      fail(
        '/tenancy/cache_salt_secret',
        `environment variable ${secret.slice(4)} is not set or shorter than 16 characters`,
        secret,
        source,
      );
    config.tenancy.cache_salt_secret = v;
  }
  const grouped = new Set<string>();
  config.tenancy.cache_groups.forEach((g, i) => {
    g.tenants.forEach((t, j) => {
      if (grouped.has(t))
        fail(`/tenancy/cache_groups/${i}/tenants/${j}`, 'a tenant can be in one cache group only', t, source);
      grouped.add(t);
    });
  });

  if (config.auth.mode === 'keys') {
    const hashes = new Set<string>();
    config.auth.keys.forEach((k, i) => {
      if (k.key.startsWith('env:')) {
        const name = k.key.slice(4);
        const v = env[name];
        if (!v) fail(`/auth/keys/${i}/key`, `environment variable ${name} is not set or empty`, k.key, source);
        k.key = `sha256:${sha256Hex(v)}`;
      } else {
        k.key = k.key.toLowerCase();
      }
      if (hashes.has(k.key)) fail(`/auth/keys/${i}/key`, 'duplicate key', `${k.key.slice(0, 19)}...`, source);
      hashes.add(k.key);
      k.id ??= k.key.slice(7, 19);
    });
  }
  return deepFreeze(config);
}

export function loadConfig(path: string, env: NodeJS.ProcessEnv = process.env): GatewayConfig {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError('(file)', `${path}: cannot read config: ${(err as Error).message}`);
  }
  let raw: unknown;
  try {
    raw = parseYaml(text);
  } catch (err) {
    throw new ConfigError('(yaml)', `${path}: invalid YAML: ${(err as Error).message}`);
  }
  return parseConfig(raw, path, env);
}
