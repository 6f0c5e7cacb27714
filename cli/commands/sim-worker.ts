// `ctxgate sim-worker`: runs one reference worker until SIGINT/SIGTERM.
import { startSimWorker } from '../../loadtest/sim-worker/index.ts';
import { OPTIONS_HELP, parseWorkerArgs } from '../../loadtest/sim-worker/options.ts';

export const help = `ctxgate sim-worker [options]
Runs a reference worker: a vLLM/SGLang stand-in with the engines' API, a real prefix cache
(vLLM hash-chained blocks or SGLang radix tree), the model's chat template and tokenizer,
modeled prefill/decode timing (reported in the x-sim-timing header) and fault injection
(flags below, or per request with the header x-sim-fault: status=503|hang=MS|die-after-chunks=N|reset).
${OPTIONS_HELP}`;

export async function run(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseWorkerArgs(argv);
  } catch (err) {
    process.stderr.write(`sim-worker: ${(err as Error).message}\n`);
    return 2;
  }
  if (parsed.rest.length) {
    process.stderr.write(`sim-worker: unknown option ${parsed.rest[0]}\n\n${help}\n`);
    return 2;
  }
  let worker;
  try {
    worker = await startSimWorker(parsed.opts);
  } catch (err) {
    process.stderr.write(`sim-worker: ${(err as Error).message}\n`);
    return 2;
  }
  const o = worker.options;
  process.stdout.write(
    `sim-worker ${o.flavor} model=${o.model} tokenizer=${o.tokenizer} kv=${o.kvTokens} listening on ${worker.url}\n`,
  );
  if (worker.kvEvents)
    process.stdout.write(
      `KV events on ${worker.kvEvents.endpoint}${worker.kvEvents.replayEndpoint ? ` (replay ${worker.kvEvents.replayEndpoint})` : ''}\n`,
    );
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  await worker.close();
  return 0;
}
