// Data tier helper: `ctxgate bench fleet … --json` on the public Mooncake conversation trace, run
// through the very command the README gives, so the tests check what a user would see. The trace:
// $CTXGATE_TRACES (a folder holding conversation_first_half.jsonl), else the `traces/mooncake/`
// folder beside $CTXGATE_TRAJECTORIES (the shared data's layout).
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { dataTrajectories } from '../fixtures/trajectories.ts';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const TRACE_FILE = 'conversation_first_half.jsonl';

function conversationTrace(): string {
  const dir = process.env.CTXGATE_TRACES ?? resolve(dataTrajectories(), '../traces/mooncake');
  const file = join(dir, TRACE_FILE);
  if (!existsSync(file))
    throw new Error(`the fleet checks need ${file} (set CTXGATE_TRACES=<folder with ${TRACE_FILE}>)`);
  return file;
}

/** The runs of `bench fleet <conversation half> --workers 8 --kv-tokens 200000 --json <extra>`. */
export async function fleetRuns<R>(extra: string[]): Promise<R[]> {
  const args = ['bin/ctxgate.js', 'bench', 'fleet', conversationTrace(), '--workers', '8', '--kv-tokens', '200000'];
  const { stdout } = await run(process.execPath, [...args, '--json', ...extra], {
    cwd: ROOT,
    maxBuffer: 64 * 1024 * 1024,
  });
  return (JSON.parse(stdout) as { runs: R[] }).runs;
}
