// ctxgate serve --config FILE: load and validate the config, start the gateway, drain on SIGTERM.
import { parseArgs } from 'node:util';
import { getHeapSpaceStatistics } from 'node:v8';
import { ConfigError, loadConfig } from '../../gateway/config/load.ts';
import { startAssembledGateway } from '../../gateway/assemble.ts';
import { PricingError } from '../../gateway/accounting/record/pricing.ts';
import { missingNodeFlags, nodeFlagsWarning } from '../../gateway/node-flags.ts';

/** After draining, how long stray handles may keep the process alive before it exits anyway. */
const EXIT_GRACE_MS = 2_000;

export const help = `ctxgate serve --config FILE [--port N] [--host H]

Runs the OpenAI-compatible gateway described by FILE (YAML, see README "Configuration").
--port / --host override listen.port / listen.host. SIGTERM or SIGINT drain in-flight
requests for up to shutdown.deadline_ms, then exit. Node should run with the gateway's flags
(gateway/node-flags.ts, as the image does), e.g.
NODE_OPTIONS='--max-semi-space-size=64 --v8-pool-size=0'; without
them serve logs a warning at start-up and runs on.`;

/** Each V8 heap space's committed size (MB, one decimal): which space heapTotal's growth is in. */
function heapSpacesMb(): Record<string, number> {
  const out: Record<string, number> = {};
  for (const s of getHeapSpaceStatistics())
    if (s.space_size > 0) out[s.space_name] = Math.round(s.space_size / 2 ** 17) / 10;
  return out;
}

export async function run(argv: string[]): Promise<number> {
  let values: { config?: string; port?: string; host?: string };
  try {
    ({ values } = parseArgs({
      args: argv,
      options: { config: { type: 'string', short: 'c' }, port: { type: 'string' }, host: { type: 'string' } },
    }));
  } catch (err) {
    process.stderr.write(`ctxgate serve: ${(err as Error).message}\n\n${help}\n`);
    return 2;
  }
  if (!values.config) {
    process.stderr.write(`ctxgate serve: --config FILE is required\n\n${help}\n`);
    return 2;
  }
  let config;
  try {
    config = loadConfig(values.config);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`ctxgate serve: ${err.message}\n`);
      return 2;
    }
    throw err;
  }
  if (values.port || values.host) {
    // The loaded config is frozen; overrides build a new listen section.
    config = {
      ...config,
      listen: {
        ...config.listen,
        host: values.host ?? config.listen.host,
        port: values.port ? Number(values.port) : config.listen.port,
      },
    };
  }
  let gw;
  try {
    gw = await startAssembledGateway(config);
  } catch (err) {
    if (err instanceof PricingError || err instanceof ConfigError) {
      process.stderr.write(`ctxgate serve: ${err.message}\n`);
      return 2;
    }
    throw err;
  }
  const missing = missingNodeFlags();
  if (missing.length > 0) gw.app.log.warn({ missing_node_flags: missing }, nodeFlagsWarning(missing));
  gw.app.log.info({ url: gw.url, models: config.models.map((m) => m.name) }, 'ctxgate listening');
  // With --expose-gc, SIGUSR2 runs a full GC, on the event loop and in every running render thread
  // (a parked thread collects nothing of its own): leak checks (bench chaos) measure settled memory.
  const gc = (globalThis as { gc?: () => void }).gc;
  const pool = gw.assembled.renderPool;
  const log = gw.app.log;
  // The breakdown after it (heap vs external vs array buffers, this thread's) says what RSS holds.
  if (gc)
    process.on('SIGUSR2', () => {
      gc();
      void (pool ? pool.collect() : Promise.resolve()).then(() =>
        log.info({ memory: process.memoryUsage(), spaces: heapSpacesMb() }, 'gc'),
      );
    });
  await new Promise<void>((resolve) => {
    const stop = (sig: string): void => {
      gw.app.log.info({ signal: sig }, 'draining');
      void gw.close().then(resolve);
    };
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
  });
  gw.app.log.info('drained; exiting');
  // Everything of ours is closed; a handle some dependency left open must not keep us alive.
  setTimeout(() => process.exit(0), EXIT_GRACE_MS).unref();
  return 0;
}
