// Node/V8 flags the gateway process is started with (the image's ENTRYPOINT; `bench overhead`
// starts its gateway child with them too, so it measures the process as deployed). V8 reads heap
// sizes once, at start-up (v8.setFlagsFromString afterwards changes nothing), so they are flags,
// not config. Outside the image: `NODE_OPTIONS='--max-semi-space-size=64 --v8-pool-size=0' npx ctxgate serve`;
// `serve` (and `up`) started without them say so at start-up (missingNodeFlags) and run on: no
// hidden re-exec, so the PID, signals and exit code an operator's supervisor sees stay its own, and
// a different value of a flag is the operator's choice, not a miss.
//
// --max-semi-space-size=64 (MB; Node 20's default is 16). What a scavenge costs here (2026-12-03,
// quiet host, growing sessions at 1 connection, `--trace-gc-nvp` and per-request /proc readings of
// the gateway process): with 64 MB ~48 MB is allocated between scavenges (~270 calls, 15-18
// scavenges per 4,000 calls) and each copies ~20 MB (8-11 MB of survivors kept in the new space and
// as much promoted: nvp's new_space_survived does not count promoted, see below): the
// call holding it uses 31-37 ms of CPU (main thread ~15, V8's helpers 15-21; a call without one
// 2.5), a 17-22 ms pause on 2 cores (27-44 ms where the host is loaded or slower: the pause is that
// CPU over the cores the process gets). The survivors are not the sessions' state: 8 or 34
// concurrent sessions copy the same 8-11 MB. They are what each call adds for longer than a
// scavenge interval (cache keys, prefix-index records, usage records: ~15 KB of heap a call still
// alive 300 calls later, by heap-snapshot ids) times the calls between scavenges, plus the call in
// flight; so the semi-space trades the number of scavenges for their length at about the same total
// (per 4,000 calls, median pause: 32 MB 31-37 x 9.4-9.9 ms, 64 MB 15-18 x 17-18 ms, 128 MB 11-12 x
// 21-28 ms; CPU of the calls holding one 0.69 / 0.54 / 0.59 s; peak RSS -75 / 0 / +100 MB). None of
// 32 / 64 / 128 brings a pause under ~9 ms (16 not measured): the lever is what calls keep, not a flag.
// 64 keeps the count of pauses (each a c1 tail call) under the 40 a 4,000-call p99 reads past.
// What a scavenge copies (s42, same traffic, nvp: promotion_ratio and new_space_survive_rate_ are
// shares of one start size, so the two add up): 9.2-12.4 MB kept in the new space plus 9.0-12.3 MB
// promoted, ~20 MB, and promotion_rate 98.5-99.4 %: nearly every byte that survives one scavenge
// survives the next (~37 KB a call). By allocation site (a sampling heap profile read after each
// scavenge: samples new in a read were copied by it; 3 intervals): encode-cache entries 18 %, the
// request body's parse 12 %, block-hash strings and arrays 11 %, prefix-index records and Map
// tables 11 %, the render memo's text 10 %, usage and request records 8 %, the rest 7 % or less
// each: session and cache data that lives hundreds of calls, each KB of it copied twice. Old-space
// copies of such strings (an internalized copy, `Object.keys({ [s]: 0 })[0]`, is never copied by a
// scavenge) for the encode-cache keys, the render memo's text and the block hashes: 19.8 → 18.2 MB
// a scavenge (one pair of runs), at +1.1 µs a 16-character hash (~34 a call) and ~2 ns a character
// for long strings, on the request path: more CPU there than the GC it saves; not done. The lever
// stays the layout of what calls keep (off the V8 heap, or fewer copies of one text), not a flag.
// Not the host's page faults: semi-space pages stay mapped between scavenges (strace of a
// scavenging loop under these flags: no munmap or MADV_DONTNEED of them before exit; no
// MADV_HUGEPAGE at all, so THP=madvise never applies); old-space pages a mark-compact frees are
// unmapped, so a scavenge that promotes first-touches ~2,000 new pages, 2.3-5 us each here (25 us
// once): 5-10 % of its CPU. Cost of 64: up to 2 x 48 MB more RSS under load than Node's 16; an idle process's new
// space stays small (V8 grows it only while objects survive). Render threads no longer take it
// (workers-pool/thread-heap.ts resets the semi-space flags before they start; the figures above
// predate that: the render threads then had 64 MB semi-spaces too); any other V8 flag here reaches
// them.
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
// flags; alone it is clamped to the default maximum (render threads no longer take either: see
// workers-pool/thread-heap.ts).
//
// --v8-pool-size=0: V8's helper threads (GC, concurrent compiling) are the cores Node sees less the
// event loop's, at least 1 (node_platform: max(uv_available_parallelism() - 1, 1); libuv reads the
// process's CPU affinity, so a cpuset counts), where Node's default is 4 whatever the cores. A
// scavenge's parallel phase runs on the main thread and up to 7 helpers (V8 caps its tasks at 8) and
// the main thread waits for every helper that took work: on 2 cores the default's 4 helpers wait
// their turn (per scavenge, quiet, 64 MB: 17-22 ms with 4 helpers, ~33 ms CPU, 34-39 ms of the
// helpers' time waiting for a core; 15-19 ms with one, ~32 ms CPU, 0.5 ms waiting; 31-36 ms with
// --single-threaded-gc, all on the event loop). On this 2-core host 0 is one helper (the same as
// =1); on a bigger host with cores to spare it is more than the default's 4, shorter pauses where
// =1 would make them longer. What it cannot see is a CPU quota (docker --cpus, a Kubernetes CPU
// limit: the cores of the node): there set it to the quota - 1, at least 1, on node's command line
// (it wins over NODE_OPTIONS, so in the image override the ENTRYPOINT: docs/deployment.md). Node 20's
// libuv (1.46); newer libuv also reads the cgroup's quota.
// Measured (`bench overhead --only growing`, 1 connection, added p99; ≤ 5 ms is #17's target):
// s41 (2026-12-03 12:15-13:00 UTC, quiet, --no-portkey, extra --gateway-node-flags): default
// 3.60 / 9.49 / 5.58 / 8.79 ms (met once in 4), one helper 4.24 / 3.34 / 4.26 ms (3 of 3), c16 p99
// 61-72 ms with one helper vs 79-132 ms. s42 (15:25-15:35 UTC, quiet, load 1.8-2.1, this flag vs
// --gateway-node-flags=--v8-pool-size=4, Node's default, on one tree): =0 with Portkey in the run
// 1.44 / 3.55 ms (c16 1.13x Portkey's req/s, CPU 1.51 ms a request, 0.16 of it off the main thread,
// c16 p99 65.6 ms); =4 1.62 / 5.56 ms (CPU 2.06, 0.57 off the main thread; c16 p99 136.2 ms); =0
// again 3.01 / 9.42 ms on a slower host (ctxgate's c1 CPU 2.91 ms a call vs 1.92 / 2.27, the
// upstream's 1.42 vs 0.97 / 1.11; CPU 1.63, 0.34 off the main thread; c16 p99 88.5 ms). One helper,
// both sessions: the c1 p99 met in 4 runs of 6, the default in 1 of 7 (s41's end window included);
// c16 p99 61-89 ms vs 79-136 ms; CPU a request not separated over both sessions (1.33-1.69 ms vs
// 1.26-2.06 ms).
// Earlier (16 connections, per-thread CPU from /proc, the variants side by side in one run, warm):
// --single-threaded-gc 1.88 ms of CPU per request, --v8-pool-size=2 1.85, neither 1.90 (noise);
// --single-threaded-gc moves the helpers' GC work (~0.26 ms per request) onto the event loop
// (main 1.60 → 1.84 ms), the one thread that serves requests. The helper threads' CPU falls with
// the process's age: early on they run the optimising compiler (0.56 ms per request over calls
// ~1.5-2 k, 0.04 ms after ~3.5 k); warm, nearly all of it is GC. Render threads share the pool.
export const GATEWAY_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=64', '--v8-pool-size=0'];

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
    `more calls carry a young-generation GC, and longer ones on a small host (the one-connection p99 tail). ` +
    `Start with NODE_OPTIONS='${missing.join(' ')}' to run as deployed.`
  );
}
