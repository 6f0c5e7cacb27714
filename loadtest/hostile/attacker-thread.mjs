// Tenant A of `bench hostile` on its own thread: a separate client, as an attacker is. Building
// and sending a 400k-character prompt costs its client 10-30 ms of CPU; on the bench's main
// thread that would stall the loop that times tenant B and /health, and count against the gateway.
// Worker threads do not inherit the main thread's tsx loader, so this one registers its own.
import { parentPort, workerData } from 'node:worker_threads';
import { register } from 'tsx/esm/api';

register();
const { bigPrompts } = await import('./traffic.ts');
const { target, key, until, opts } = workerData;
const tally = { ms: [], statuses: {} };
await bigPrompts(target, key, until, tally, opts);
parentPort.postMessage(tally);
