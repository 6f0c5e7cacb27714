// ctxgate bench hostile: one tenant attacks, another works. Reference workers (child processes)
// behind ctxgate (child process, the default pipeline: layout ctxgate, qwen3, policy ctxgate, the
// render pool at its default size) with two tenants and keys. Phases: warm-up, quiet (tenant B's
// small calls and a /health prober alone), attack (the same, while tenant A sends 400k-character
// prompts back to back from a thread of its own, as a separate client, and with --attacks all also
// 100k characters without a space, malformed tool schemas at 8/s and slow-header/slow-body
// connections), then the correctness probes
// (hostile/probes.ts): cross-tenant cached tokens, secrets in any store, unescaped markers.
// Targets: B's p99 under attack ≤ 2× its quiet p99; /health p99 under attack < 50 ms; 0, 0, 0.
import { createHash } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { setPriority, tmpdir } from 'node:os';
import { join } from 'node:path';
import { benchLog, parseOrUsage, readOptions } from './chaos/bench-cli.ts';
import { ChaosFleet } from './chaos/fleet.ts';
import { startGatewayProc, type GatewayProc } from './chaos/gateway-proc.ts';
import { percentile } from './chaos/load.ts';
import {
  crossTenantProbe,
  filesUnder,
  plantedSecrets,
  plantProbe,
  recordingProxy,
  records,
  secretsFound,
  unescapedMarkers,
  type CrossTenant,
} from './hostile/probes.ts';
import {
  bigPrompts,
  bigPromptsOffThread,
  emptyTally,
  healthProber,
  malformedTools,
  quietTenant,
  slowConnections,
  type Tally,
  type Target,
} from './hostile/traffic.ts';

export const DEFAULTS = {
  phaseS: 10,
  rounds: 3,
  workers: 3,
  chars: 400_000,
  attackConcurrency: 2,
  slow: 100,
  workersNice: 10,
  /** A long-context engine's window (Qwen3-Coder's native 262,144): a 400k-character prompt
   *  (~242k qwen3 tokens) fits, so the attack is a real prefill, not a 400 after tokenising. */
  maxModelLen: 262_144,
} as const;
const MODEL = 'hostile-model';
const PROBE_MODEL = 'hostile-probe';
const TOKENIZER = 'qwen3';
const KEYS = { a: 'sk-hostile-tenant-a-0123456789', b: 'sk-hostile-tenant-b-0123456789' };
/** Targets of the issue: B's p99 ratio and /health p99 under attack. */
const MAX_P99_RATIO = 2;
const MAX_HEALTH_P99_MS = 50;
const ATTACKS = ['big', 'nospace', 'tools', 'slow'] as const;
type Attack = (typeof ATTACKS)[number];

export const help = `ctxgate bench hostile [--phase-s N] [--rounds N] [--workers N] [--chars N] [--attack-concurrency N] [--attacks big|all|LIST] [--pool-threads N] [--workers-nice N] [--max-model-len N] [--cpu-prof DIR] [--json]

Starts --workers reference workers and ctxgate (child processes; the default pipeline with the
render pool, --pool-threads 0 turns it off as a labelled baseline; --cpu-prof DIR writes a V8
CPU profile of the gateway's event loop) with two tenants and keys. The workers run at
--workers-nice (default ${DEFAULTS.workersNice}): they stand in for engines on GPU hosts, and on a small machine their
own tokenising of a 400k prompt would otherwise take the CPU from the gateway under test. Their
--max-model-len (default ${DEFAULTS.maxModelLen}) holds A's prompts, so each is answered after a
real prefill; a prompt longer than that gets the engine's 400, as vLLM answers it.
Tenant B sends small calls one after another and a prober reads /health every 50 ms, in --rounds
rounds of a quiet window (alone for --phase-s seconds) and an attack window (from when tenant A
starts until its last call started within --phase-s seconds has ended): --attack-concurrency
streams of --chars-character prompts back to back (big; tenant A runs on a thread of its own, so
building its prompts never stalls the loop that times B); with --attacks all (or a comma list of
big,nospace,tools,slow) also 100k characters without a space, malformed tool schemas at 8/s and
${DEFAULTS.slow} slow-header/slow-body connections. Then probes: B sends A's exact system prompt
(cross-tenant cached tokens), both send planted secrets and [ctxgate] look-alikes in every role
(secrets found in capture, artifacts, ledger and request records; unescaped markers reaching the
worker). Prints B's and /health's p50/p99 quiet vs attack and the ratios; targets: B p99 ≤ ${MAX_P99_RATIO}× quiet,
/health p99 < ${MAX_HEALTH_P99_MS} ms, 0 cross-tenant cached tokens, 0 secrets, 0 unescaped markers.
Defaults: --phase-s ${DEFAULTS.phaseS} --rounds ${DEFAULTS.rounds} --workers ${DEFAULTS.workers} --chars ${DEFAULTS.chars} --attack-concurrency ${DEFAULTS.attackConcurrency} --attacks big`;

const sha = (k: string) => `sha256:${createHash('sha256').update(k).digest('hex')}`;

export function gatewayConfig(o: { urls: string[]; probeUrl: string; dir: string; poolThreads?: number }): string {
  const workers = o.urls.map((u, i) => `      - { url: '${u}', id: w${i} }`).join('\n');
  return [
    'listen: { host: 127.0.0.1, port: 0 }',
    'health: { interval_ms: 1000, timeout_ms: 5000, eject_after: 3, readmit_after: 1 }',
    'auth:',
    '  mode: keys',
    '  keys:',
    `    - { key: '${sha(KEYS.a)}', tenant: a }`,
    `    - { key: '${sha(KEYS.b)}', tenant: b }`,
    'tenancy: { cache_salt_secret: hostile-bench-secret-0123456789 }',
    `ledger: { path: '${join(o.dir, 'usage.sqlite')}' }`,
    `artifacts: { dir: '${join(o.dir, 'artifacts')}' }`,
    ...(o.poolThreads !== undefined ? [`render_pool: { threads: ${o.poolThreads} }`] : []),
    'models:',
    `  - name: ${MODEL}`,
    '    layout: ctxgate',
    `    tokenizer: ${TOKENIZER}`,
    '    policy: ctxgate',
    '    workers:',
    workers,
    // The probe model: capture on and a small budget (compaction writes artifacts), its worker
    // behind the bench's recording proxy; the same engine underneath.
    `  - name: ${PROBE_MODEL}`,
    `    upstream_model: ${MODEL}`,
    '    layout: ctxgate',
    `    tokenizer: ${TOKENIZER}`,
    '    policy: ctxgate',
    '    budget_tokens: 6000',
    `    capture: { enabled: true, sample_rate: 1, dir: '${join(o.dir, 'capture')}' }`,
    '    workers:',
    `      - { url: '${o.probeUrl}', id: probe }`,
    '',
  ].join('\n');
}

interface Latency {
  n: number;
  p50_ms: number;
  p99_ms: number;
  statuses: Record<string, number>;
}

const lat = (t: Tally): Latency => ({
  n: t.ms.length,
  p50_ms: +percentile(t.ms, 50).toFixed(1),
  p99_ms: +percentile(t.ms, 99).toFixed(1),
  statuses: t.statuses,
});

export interface HostileReport {
  pool_threads: number | 'default';
  /** Niceness of the reference worker processes (they stand in for engines on other hosts). */
  workers_nice: number;
  /** The reference workers' max_model_len. */
  max_model_len: number;
  phase_s: number;
  rounds: number;
  attacks: Attack[];
  chars: number;
  b_quiet: Latency;
  b_attack: Latency;
  b_p99_ratio: number;
  health_quiet: Latency;
  health_attack: Latency;
  attacker: Record<string, Latency | { opened: number; open: number }>;
  cross_tenant: CrossTenant;
  secrets_found: number;
  secrets_where: string[];
  stores_scanned: string[];
  unescaped_markers: number;
  worker_bodies_scanned: number;
  targets_met: { b_p99_ratio: boolean; health_p99: boolean; cross_tenant: boolean; secrets: boolean; markers: boolean };
  gateway_errors: string[];
}

function parse(argv: string[]) {
  const a = readOptions(
    argv,
    [
      'phase-s',
      'rounds',
      'workers',
      'chars',
      'attack-concurrency',
      'attacks',
      'pool-threads',
      'cpu-prof',
      'workers-nice',
      'max-model-len',
    ],
    ['json'],
  );
  const list = a.str('attacks') ?? 'big';
  const attacks = (list === 'all' ? [...ATTACKS] : list.split(',')) as Attack[];
  for (const x of attacks) if (!ATTACKS.includes(x)) throw new Error(`--attacks: unknown attack '${x}'`);
  return {
    phaseS: a.num('phase-s', DEFAULTS.phaseS, 1),
    rounds: a.int('rounds', DEFAULTS.rounds, 1),
    workers: a.int('workers', DEFAULTS.workers, 1),
    chars: a.int('chars', DEFAULTS.chars, 1),
    attackConcurrency: a.int('attack-concurrency', DEFAULTS.attackConcurrency, 1),
    attacks,
    poolThreads: a.str('pool-threads') === undefined ? undefined : a.int('pool-threads', 0, 0),
    cpuProf: a.str('cpu-prof'),
    workersNice: a.int('workers-nice', DEFAULTS.workersNice, 0),
    maxModelLen: a.int('max-model-len', DEFAULTS.maxModelLen, 1),
    json: a.bool('json'),
  };
}

export async function run(argv: string[]): Promise<number> {
  const o = parseOrUsage('bench hostile', help, argv, parse);
  if (o === 2) return 2;
  const log = benchLog(o.json);
  const fleet = new ChaosFleet({ model: MODEL, tokenizer: TOKENIZER, timeScale: 0, maxModelLen: o.maxModelLen });
  let gw: GatewayProc | undefined;
  let proxy: Awaited<ReturnType<typeof recordingProxy>> | undefined;
  try {
    log(`starting ${o.workers} workers...`);
    await fleet.start(o.workers);
    // The reference workers stand in for engines on GPU hosts; here they share the gateway's cores,
    // and a worker tokenising a 400k prompt would take the CPU from the event loop under test.
    for (const pid of fleet.pids()) setPriority(pid, o.workersNice);
    proxy = await recordingProxy(fleet.urls()[0]);
    const dir = mkdtempSync(join(tmpdir(), 'ctxgate-hostile-'));
    const cfg = join(dir, 'gateway.yaml');
    writeFileSync(cfg, gatewayConfig({ urls: fleet.urls(), probeUrl: proxy.url, dir, poolThreads: o.poolThreads }));
    gw = await startGatewayProc(cfg, o.cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${o.cpuProf}`] : []);
    const t: Target = { url: gw.url, model: MODEL };
    const seqB = { n: 0 };
    const seqA = { n: 0 };

    log('warm-up (tokenizers, the pool thread, the workers)...');
    await Promise.all([
      quietTenant(t, KEYS.b, Date.now() + 3_000, emptyTally(), seqB),
      bigPrompts(t, KEYS.a, Date.now() + 1, emptyTally(), { chars: o.chars, concurrency: 1, seq: seqA }),
    ]);

    // Quiet and attack windows alternate, so a change in the machine's background load hits both.
    const bQuiet = emptyTally();
    const hQuiet = emptyTally();
    const bAttack = emptyTally();
    const hAttack = emptyTally();
    const attackTally: Partial<Record<Attack, Tally>> = {};
    const tallyOf = (a: Attack): Tally => (attackTally[a] ??= emptyTally());
    const slow = { opened: 0, open: 0 };
    for (let round = 1; round <= o.rounds; round++) {
      log(`round ${round}/${o.rounds}: quiet ${o.phaseS} s (tenant B and /health alone)...`);
      const quietUntil = Date.now() + o.phaseS * 1000;
      await Promise.all([quietTenant(t, KEYS.b, quietUntil, bQuiet, seqB), healthProber(gw.url, quietUntil, hQuiet)]);
      log(
        `round ${round}/${o.rounds}: attack ${o.phaseS} s (tenant A: ${o.attacks.join(', ')}), until its last call ends...`,
      );
      const until = Date.now() + o.phaseS * 1000;
      const attacks: Promise<unknown>[] = [];
      if (o.attacks.includes('big'))
        attacks.push(
          bigPromptsOffThread(t, KEYS.a, until, tallyOf('big'), {
            chars: o.chars,
            concurrency: o.attackConcurrency,
            seq: seqA,
          }),
        );
      if (o.attacks.includes('nospace'))
        attacks.push(
          bigPromptsOffThread(t, KEYS.a, until, tallyOf('nospace'), {
            chars: 100_000,
            concurrency: 1,
            noSpace: true,
            seq: seqA,
          }),
        );
      if (o.attacks.includes('tools')) attacks.push(malformedTools(t, KEYS.a, until, tallyOf('tools')));
      if (o.attacks.includes('slow'))
        attacks.push(
          slowConnections(gw.url, DEFAULTS.slow, until).then((r) => {
            slow.opened += r.opened;
            slow.open += r.open;
          }),
        );
      // B and the prober measure for as long as any attack call is still in flight.
      let done = false;
      const attacking = Promise.all(attacks).then(() => void (done = true));
      await Promise.all([
        quietTenant(t, KEYS.b, () => done, bAttack, seqB),
        healthProber(gw.url, () => done, hAttack),
        attacking,
      ]);
    }
    const attacker: HostileReport['attacker'] = {};
    for (const [k, v] of Object.entries(attackTally)) attacker[k] = lat(v);
    if (o.attacks.includes('slow')) attacker.slow = slow;

    log('probes: cross-tenant cache, secrets, markers...');
    const probe: Target = { url: gw.url, model: PROBE_MODEL };
    const cross = await crossTenantProbe(probe, KEYS.a, KEYS.b);
    const secrets = plantedSecrets();
    const idsA = await plantProbe(probe, KEYS.a, secrets.texts, 'hostile-probe-a');
    const idsB = await plantProbe(probe, KEYS.b, secrets.texts.slice().reverse(), 'hostile-probe-b');
    const recs = [...(await records(gw.url, KEYS.a, idsA)), ...(await records(gw.url, KEYS.b, idsB))];
    const code = await gw.stop();
    gw = undefined;
    const files = filesUnder(dir).filter((f) => !f.path.endsWith('gateway.yaml'));
    const found = secretsFound(secrets.values, [...files, ...recs.map((text, i) => ({ path: `record ${i}`, text }))]);
    const markers = unescapedMarkers(proxy.bodies);

    const bq = lat(bQuiet);
    const ba = lat(bAttack);
    const hq = lat(hQuiet);
    const ha = lat(hAttack);
    const ratio = bq.p99_ms > 0 ? +(ba.p99_ms / bq.p99_ms).toFixed(2) : 0;
    const report: HostileReport = {
      pool_threads: o.poolThreads ?? 'default',
      workers_nice: o.workersNice,
      max_model_len: o.maxModelLen,
      phase_s: o.phaseS,
      rounds: o.rounds,
      attacks: o.attacks,
      chars: o.chars,
      b_quiet: bq,
      b_attack: ba,
      b_p99_ratio: ratio,
      health_quiet: hq,
      health_attack: ha,
      attacker,
      cross_tenant: cross,
      secrets_found: found.count,
      secrets_where: found.where,
      stores_scanned: [`${files.length} files (capture, artifacts, ledger)`, `${recs.length} request records`],
      unescaped_markers: markers,
      worker_bodies_scanned: proxy.bodies.length,
      targets_met: {
        b_p99_ratio: ratio > 0 && ratio <= MAX_P99_RATIO,
        health_p99: ha.n > 0 && ha.p99_ms < MAX_HEALTH_P99_MS,
        cross_tenant: cross.cross_tenant_cached_tokens === 0,
        secrets: found.count === 0,
        markers: markers === 0 && proxy.bodies.length > 0,
      },
      gateway_errors: code === 0 ? [] : [`gateway exit code ${code}`],
    };
    if (o.json) process.stdout.write(JSON.stringify(report, null, 2) + '\n');
    else {
      log(
        `tenant B  quiet p50 ${bq.p50_ms} ms p99 ${bq.p99_ms} ms (n ${bq.n}) | attack p50 ${ba.p50_ms} ms p99 ${ba.p99_ms} ms (n ${ba.n}) | p99 ×${ratio} (target ≤ ${MAX_P99_RATIO})`,
      );
      log(
        `/health   quiet p50 ${hq.p50_ms} ms p99 ${hq.p99_ms} ms | attack p50 ${ha.p50_ms} ms p99 ${ha.p99_ms} ms (target < ${MAX_HEALTH_P99_MS})`,
      );
      for (const [k, v] of Object.entries(attacker)) log(`attacker ${k}: ${JSON.stringify(v)}`);
      log(
        `cross-tenant cached tokens ${cross.cross_tenant_cached_tokens} (control, same tenant: ${cross.same_tenant_cached_tokens})`,
      );
      log(
        `secrets found ${found.count} in ${report.stores_scanned.join(', ')}${found.where.length ? `: ${found.where.join('; ')}` : ''}`,
      );
      log(`unescaped markers ${markers} in ${proxy.bodies.length} worker bodies`);
      log(`targets met: ${JSON.stringify(report.targets_met)}`);
    }
    return 0;
  } finally {
    await gw?.stop();
    await proxy?.close();
    await fleet.close();
  }
}
