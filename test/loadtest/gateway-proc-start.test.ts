// bench chaos's gateway process: a start that fails never leaves a gateway running. Past the
// start timeout the process is killed and the start rejects only once it has exited; a gateway
// that exits on its own (a config error) rejects with what it logged.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { writePassthroughGatewayConfig } from '../helpers/passthrough-gateway-config.ts';
import { GatewayStartError, startGatewayProc } from '../../loadtest/chaos/gateway-proc.ts';

const dir = mkdtempSync(join(tmpdir(), 'ctxgate-gw-start-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ESRCH') return false;
    throw err;
  }
}

async function startError(cfg: string, timeoutMs?: number): Promise<GatewayStartError> {
  const err = await startGatewayProc(cfg, [], undefined, timeoutMs).then(
    async (gw) => {
      await gw.stop();
      throw new Error('the gateway started');
    },
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(GatewayStartError);
  return err as GatewayStartError;
}

it('kills a gateway that does not start in time, and rejects once it has exited', async () => {
  const cfg = writePassthroughGatewayConfig(join(dir, 'ok.yaml'));
  // 1 ms: node cannot load the CLI, let alone listen, in that time
  const err = await startError(cfg, 1);
  expect(err.message).toMatch(/did not start within 1 ms: killed/);
  expect(err.pid).toBeGreaterThan(0);
  expect(alive(err.pid!)).toBe(false);
}, 60_000);

it('rejects with what a gateway that exits during start logged', async () => {
  const cfg = join(dir, 'bad.yaml');
  writeFileSync(cfg, 'listen: { host: 127.0.0.1, port: 0 }\nmodels: not-a-list\n');
  const err = await startError(cfg);
  expect(err.message).toMatch(/exited during start \(\d+\)/);
  expect(alive(err.pid!)).toBe(false);
}, 240_000);
