// Node/V8 flags the gateway process is started with (the image's ENTRYPOINT; `bench overhead`
// starts its gateway child with them too, so it measures the process as deployed). V8 reads heap
// sizes once, at start-up (v8.setFlagsFromString afterwards changes nothing), so they are flags,
// not config. Outside the image: `NODE_OPTIONS=--max-semi-space-size=64 npx ctxgate serve`;
// `serve` (and `up`) started without them say so at start-up (missingNodeFlags) and run on: no
// hidden re-exec, so the PID, signals and exit code an operator's supervisor sees stay its own, and
// a different value of a flag is the operator's choice, not a miss.
//
// --max-semi-space-size=64 (MB; Node 20's default is 16): a default-pipeline call allocates
// ~440 KiB, so a 16 MB semi-space fills every ~37 calls and ~1.9 % of calls carry a scavenge.
// Each scavenge copies what is alive at that moment (~3.2 MB: the sessions' latest state and the
// call in flight), so those calls are the c1 tail: 23-27 of the top 30 calls by main-thread CPU
// (of 3,000) contained one. With 64 MB the new space grows to ~42 MB between
// scavenges (~95 calls): 0.7 % of calls carry one, state a session replaces within ~34 calls dies
// before it is copied, so bytes copied and bytes promoted per call fall ~0.65x (fewer
// mark-compacts). Each scavenge copies ~6.7 MB and is ~2x longer (p99.9 and max, not p99). Cost: up to 2 x 48 MB
// more RSS under load (two semi-spaces; +120 MB measured at c1); an idle process's new space stays
// small (V8 grows it only while objects survive).
// The flag is a ceiling, not a size: V8 grows the young generation (x2) once about a capacity's
// worth of bytes has survived scavenges, and shrinks it at a GC after idle time or slow allocation.
// Two gateways of one tree taking turns at 1 connection (each idle during the other's rounds; load
// 16-19, 2026-12-02) read new space 32 to 128 MB across rounds and 8.7 scavenges per 1,000 calls
// (median; 23.7 in a round right after the shrink); --min-semi-space-size=64 held it at 128 MB:
// 1.3 per 1,000, calls holding a GC pause 1.25 → 0.63 %, RSS ~+90 MB (medians).
// Not set, after the quiet A/B (2026-12-03, load ~2, `bench overhead --only growing --no-portkey`
// with and without --gateway-node-flags=--min-semi-space-size=64, base/flag/flag/base): added p99 at
// 1 connection 8.28 / 7.92 ms with it vs 9.99 / 2.49 ms without (3-s rounds: the 3rd-10th slowest
// call, no separation), CPU per request at 16 connections 1.41 / 1.55 vs 1.69 / 1.56 ms, peak RSS
// ~870 vs ~870 MB. And it has costs the bench does not show: node refuses it in NODE_OPTIONS (exit 9,
// `is not allowed in NODE_OPTIONS`), the way this file tells operators outside the image to pass the
// flags; alone it is clamped to the default maximum; V8 flags reach every render-pool isolate.
//
// Not set, after measuring (16 connections, 2 cores, growing sessions, per-thread CPU from /proc,
// the variants side by side in one run; rounds after ~3.5 k calls, so the JIT is warm): with
// --single-threaded-gc the process used 1.88 ms of CPU per request, with --v8-pool-size=2 (V8
// helper threads 4 → 2) 1.85, with neither 1.90 (noise). --single-threaded-gc only moves the
// GC helpers' work (~0.26 ms per request) onto the event loop (main 1.60 → 1.84 ms), which is
// the one thread that serves requests: a host with free cores would lose throughput.
// The helper threads' CPU falls with the process's age: early on they run the optimising compiler
// (with GC kept off them: 0.56 ms per request over calls ~1.5-2 k, 0.04 ms after ~3.5 k); warm,
// the default's helpers spend ~0.3 ms per request, nearly all of it GC.
export const GATEWAY_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=64'];

/** A flag's name as V8 reads it: `--max_semi_space_size=8` and `--max-semi-space-size=8` are one flag. */
function flagName(arg: string): string {
  const eq = arg.indexOf('=');
  return (eq < 0 ? arg : arg.slice(0, eq)).replaceAll('_', '-');
}

/**
 * GATEWAY_NODE_FLAGS this process was started without: named neither on node's command line
 * (`execArgv`) nor in NODE_OPTIONS (any value counts as given).
 */
export function missingNodeFlags(
  execArgv: readonly string[] = process.execArgv,
  nodeOptions: string = process.env.NODE_OPTIONS ?? '',
): string[] {
  const given = new Set([...execArgv, ...nodeOptions.split(/\s+/)].filter((a) => a.startsWith('--')).map(flagName));
  return GATEWAY_NODE_FLAGS.filter((f) => !given.has(flagName(f)));
}

/** The start-up warning for `missing` flags: what is lost, and the command line that fixes it. */
export function nodeFlagsWarning(missing: readonly string[]): string {
  return (
    `node runs without ${missing.join(' ')} (gateway/node-flags.ts; the image's ENTRYPOINT has it): ` +
    `more calls carry a young-generation GC (the one-connection p99 tail). ` +
    `Start with NODE_OPTIONS='${missing.join(' ')}' to run as deployed.`
  );
}
