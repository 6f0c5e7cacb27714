// One reference worker in its own process, for `bench chaos`: a SIGKILL really closes its
// listening socket and its connections, as when an engine dies. The parent (fork, IPC) sets
// worker-wide faults with {fault: {...}} messages; 'ready' carries the bound port.
// argv: --port N --model NAME --tokenizer SPEC --time-scale F --seed N [--max-model-len N]
import { parseArgs } from 'node:util';
import type { FaultConfig } from '../sim-worker/faults.ts';
import { startSimWorker } from '../sim-worker/index.ts';

const { values } = parseArgs({
  options: {
    port: { type: 'string' },
    model: { type: 'string' },
    tokenizer: { type: 'string' },
    'time-scale': { type: 'string' },
    seed: { type: 'string' },
    'max-model-len': { type: 'string' },
  },
});
const worker = await startSimWorker({
  port: Number(values.port ?? 0),
  model: values.model ?? 'chaos-model',
  tokenizer: values.tokenizer ?? 'qwen3',
  timeScale: Number(values['time-scale'] ?? 0),
  seed: Number(values.seed ?? 0),
  ...(values['max-model-len'] !== undefined ? { maxModelLen: Number(values['max-model-len']) } : {}),
});
process.on('message', (m: { fault?: Partial<FaultConfig> }) => {
  if (m.fault) worker.setFault(m.fault);
});
process.on('SIGTERM', () => void worker.close().then(() => process.exit(0)));
process.send?.({ ready: true, port: worker.port });
