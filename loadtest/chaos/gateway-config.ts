// bench chaos's gateway config: the default pipeline (layout ctxgate, the workers' tokenizer, policy
// ctxgate) or passthrough as a labelled extra, Redis-backed with --redis, the gate as --dispatch /
// --release-ms-per-token say; the usage ledger in the run's temp dir. Pure: text in, YAML out.
import { join } from 'node:path';
import { type ChaosLayout, DEFAULTS, type DispatchChoice } from './options.ts';

export const MODEL = 'chaos-model';
/** The workers' tokenizer, and the gateway's for the default pipeline. */
export const TOKENIZER = 'qwen3';

/** The chaos gateway's config; its usage ledger lives in the run's temp dir, never in the cwd. */
export function gatewayConfig(
  urls: string[],
  dir: string,
  redisUrl?: string,
  layout: ChaosLayout = 'ctxgate',
  maxSessions: number = DEFAULTS.sessions,
  dispatch: DispatchChoice = {},
): string {
  const workers = urls.map((u, i) => `      - { url: '${u}', id: w${i} }`).join('\n');
  return [
    'listen: { host: 127.0.0.1, port: 0 }',
    // A generous health timeout: on a saturated box a busy worker answers /health slowly, and
    // ejecting every busy worker at once would fail calls (dead ones are ejected by requests).
    'health: { interval_ms: 500, timeout_ms: 2000, eject_after: 3, readmit_after: 1 }',
    // Fail fast on a dead or hanging worker and try the others: attempts = every worker.
    `upstream: { connect_timeout_ms: 500, headers_timeout_ms: 4000, body_timeout_ms: 6000, attempts: ${Math.max(2, urls.length)} }`,
    'shutdown: { deadline_ms: 5000 }',
    // A benchmark's records must not land in the user's default ledger (ctxgate-usage.sqlite).
    `ledger: { path: '${join(dir, 'usage.sqlite')}' }`,
    // Every loop round starts a new session and the store keeps each one for hours (up to
    // limits.max_session_bytes): RSS would grow with calls served until that cap, by design. Capped at
    // one session per loop, the store is full after the warm-up, so RSS growth past it is a leak.
    `limits: { max_sessions: ${maxSessions}${redisUrl ? ', rate_limit: { per_minute: 1000000 }' : ''} }`,
    ...(redisUrl ? [`redis: { url: '${redisUrl}' }`] : []),
    'models:',
    `  - name: ${MODEL}`,
    ...(layout === 'ctxgate'
      ? [
          '    layout: ctxgate',
          `    tokenizer: ${TOKENIZER}`,
          '    policy: ctxgate',
          ...(dispatch.dispatch ? [`    dispatch: ${dispatch.dispatch}`] : []),
          ...(dispatch.releaseMsPerToken === undefined
            ? []
            : [`    admission: { release_ms_per_token: ${dispatch.releaseMsPerToken} }`]),
        ]
      : ['    layout: passthrough', '    policy: round_robin']),
    '    workers:',
    workers,
    '',
  ].join('\n');
}
