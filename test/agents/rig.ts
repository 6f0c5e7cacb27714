// The gateway an agent CLI runs against in the agent tier: two reference workers (qwen3
// tokenizer, tool calls on the agent's workspace, plain text after a few tool turns) behind the
// assembled product (`layout: ctxgate`, `policy: ctxgate`, capture on), with every pipeline run
// checked by the lossless checker per session and every finished request's usage kept. The
// gateway's log goes to a file that failing tests print.
import { createHash } from 'node:crypto';
import { appendFileSync, existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { assemble } from '../../gateway/assemble.ts';
import { parseConfig } from '../../gateway/config/load.ts';
import { startGateway } from '../../gateway/server.ts';
import type { UsageEvent } from '../../gateway/usage-event.ts';
import { startSimWorker, type SimWorker } from '../../loadtest/sim-worker/index.ts';
import { createLosslessTracker, type LosslessReport, type LosslessTracker } from '../../middleware/lossless/check.ts';

export const AGENT_MODEL = 'qwen3-coder';
export const AGENT_KEY = 'sk-agent-tier-0123456789abcdef';

export interface LosslessCall {
  session: string;
  /** The conversation's routing key: the first call's id, also for a derived-id fork. */
  affinity: string;
  report: LosslessReport;
  /** Number of messages and whether tools were offered: tells the agent's main loop from side calls. */
  messages: number;
  tools: number;
}

export interface AgentRig {
  /** Gateway base URL without `/v1`. */
  url: string;
  model: string;
  key: string;
  usage: UsageEvent[];
  lossless: LosslessCall[];
  captureDir: string;
  logFile: string;
  /** 4xx/5xx answers with their requests. */
  errorFile: string;
  workers: SimWorker[];
  /** Waits until usage events stop arriving (they follow the response) and capture files are written. */
  settle(): Promise<void>;
  close(): Promise<void>;
}

export interface RigOptions {
  dir: string;
  /** Directories the workers may list to name real files in tool calls (the agents' work dirs). */
  workspaceRoots: string[];
  seed?: number;
  /** Reference-worker tool-call share and tool turns per user message. */
  toolCallRate?: number;
  maxToolTurns?: number;
  /** The workers answer as a reasoning model (reasoning_content before each answer). */
  reasoning?: boolean;
}

export async function startAgentRig(o: RigOptions): Promise<AgentRig> {
  const workers: SimWorker[] = [];
  for (let i = 0; i < 2; i++) {
    workers.push(
      await startSimWorker({
        model: AGENT_MODEL,
        tokenizer: 'qwen3',
        seed: (o.seed ?? 1) + i,
        toolCallRate: o.toolCallRate ?? 0.9,
        maxToolTurns: o.maxToolTurns ?? 3,
        reasoning: o.reasoning,
        workspaceRoots: o.workspaceRoots,
        kvTokens: 2_000_000,
        maxModelLen: 262_144,
      }),
    );
  }
  const captureDir = join(o.dir, 'capture');
  const logFile = join(o.dir, 'gateway.log');
  const errorFile = join(o.dir, 'gateway-errors.log');
  const config = parseConfig(
    {
      listen: { host: '127.0.0.1', port: 0 },
      auth: {
        mode: 'keys',
        keys: [{ key: `sha256:${createHash('sha256').update(AGENT_KEY).digest('hex')}`, tenant: 'agents' }],
      },
      health: { interval_ms: 0 },
      ledger: { path: join(o.dir, 'usage.sqlite'), flush_ms: 100 },
      models: [
        {
          name: AGENT_MODEL,
          tokenizer: 'qwen3',
          layout: 'ctxgate',
          policy: 'ctxgate',
          workers: workers.map((w, i) => ({ url: w.url, id: `w${i}`, kv_tokens: 2_000_000 })),
          capture: { enabled: true, sample_rate: 1, dir: captureDir },
        },
      ],
    },
    'agent tier',
  );
  const usage: UsageEvent[] = [];
  const lossless: LosslessCall[] = [];
  const trackers = new Map<string, LosslessTracker>();
  const a = assemble(config, {
    logger: { level: 'info', file: logFile } as never,
    tap: (client, result) => {
      let t = trackers.get(result.sessionId);
      if (!t) trackers.set(result.sessionId, (t = createLosslessTracker()));
      const report = t.check(client, result.body, result.receipts);
      lossless.push({
        session: result.sessionId,
        affinity: result.affinityKey ?? result.sessionId,
        report,
        messages: client.messages.length,
        tools: Array.isArray(client.tools) ? client.tools.length : 0,
      });
    },
  });
  const onUsage = a.deps.onUsage;
  const registerRoutes = a.deps.registerRoutes;
  const gw = await startGateway(config, {
    ...a.deps,
    onUsage: (ev) => {
      usage.push(ev);
      onUsage?.(ev);
    },
    registerRoutes: (app, ctx) => {
      // Error answers with the request that caused them, for the failure output (the access log has statuses only).
      app.addHook('onSend', (req, reply, payload, done) => {
        if (reply.statusCode >= 400) {
          const body = JSON.stringify(req.body ?? null);
          appendFileSync(
            errorFile,
            `${req.method} ${req.url} -> ${reply.statusCode} ${String(payload).slice(0, 2000)}\n  request: ${body.length > 4000 ? body.slice(0, 4000) + '…' : body}\n`,
          );
        }
        done(null, payload);
      });
      registerRoutes?.(app, ctx);
    },
  });
  return {
    url: gw.url,
    model: AGENT_MODEL,
    key: AGENT_KEY,
    usage,
    lossless,
    captureDir,
    logFile,
    errorFile,
    workers,
    settle: async () => {
      // Usage events are emitted after the response ends; give the event loop a moment.
      const end = Date.now() + 2000;
      let n = -1;
      while (Date.now() < end && n !== usage.length) {
        n = usage.length;
        await new Promise((r) => setTimeout(r, 150));
      }
      for (const c of a.captures.values()) await c.flush();
    },
    close: async () => {
      await gw.close();
      await a.close();
      await Promise.all(workers.map((w) => w.close()));
    },
  };
}

/** Captured request-stream files (one per session) under the rig's capture dir. */
export function capturedFiles(rig: AgentRig): string[] {
  const out: string[] = [];
  if (!existsSync(rig.captureDir)) return out;
  for (const tenant of readdirSync(rig.captureDir))
    for (const f of readdirSync(join(rig.captureDir, tenant))) out.push(join(rig.captureDir, tenant, f));
  return out.sort();
}

/** The last `n` lines of the gateway's log and its error answers (for failure output). */
export function logTail(rig: AgentRig, n = 60): string {
  const read = (f: string, none: string): string =>
    existsSync(f) ? readFileSync(f, 'utf8').trimEnd().split('\n').slice(-n).join('\n') : none;
  return `${read(rig.logFile, '(no gateway log)')}\n--- gateway error answers ---\n${read(rig.errorFile, '(none)')}`;
}
