// `ctxgate bench overhead --help`: what the bench runs, its targets, and how to read each figure.
import { GATEWAY_NODE_FLAGS } from '../../gateway/node-flags.ts';
import { DEFAULT_C1_CALLS, THROUGHPUT_CONNECTIONS } from './result.ts';
import { SLOW_CALLS_SHARE } from './slow-calls.ts';
import { THROUGHPUT_ROUNDS } from './throughput-rounds.ts';
import {
  WARMUP_CHUNK_CALLS,
  WARMUP_MAX_CHUNKS,
  WARMUP_MAX_S,
  WARMUP_FALL_BAND,
  WARMUP_FLOOR_CHUNKS,
  WARMUP_WINDOW,
} from './warm-up.ts';

/** Seconds per run unless --duration says otherwise. */
export const DEFAULT_DURATION_S = 3;

export const help = `ctxgate bench overhead [--json] [--duration S] [--c1-calls N] [--connections N] [--sessions N] [--only growing|ingress|fixed] [--no-portkey] [--never-caching-upstream] [--cpu-prof DIR] [--gateway-node-flags=FLAGS]

What ctxgate adds over a zero-latency upstream, beside a bare @fastify/http-proxy and the Portkey
gateway (@portkey-ai/gateway), in one run. Growing agent sessions (--sessions concurrent, each call
one ~550-token tool output longer, ~1k to ~17k tokens, a new session after 30 calls), non-stream,
through ctxgate's default pipeline (layout ctxgate, qwen3 tokenizer, policy ctxgate) on 1
connection (latency) and ${THROUGHPUT_CONNECTIONS} (throughput); the gateway's time per request by stage; then
fixed ~1k/~16k-token bodies, stream and not, through ctxgate passthrough (a labelled extra).
Ingress: the same growing sessions as Anthropic Messages (/v1/messages) and OpenAI Responses
(/v1/responses, store: false) bodies beside chat, 1 connection (target: <= 0.3 ms added p50).
Targets: growing, 1 connection: added p50 <= 1 ms and p99 <= 5 ms over direct; ${THROUGHPUT_CONNECTIONS}
connections: req/s >= Portkey's, judged on ${THROUGHPUT_ROUNDS} paired rounds: after the ${THROUGHPUT_CONNECTIONS}-connection
rows, ctxgate and Portkey take turns for ${DEFAULT_DURATION_S} s each on the same session generator (fresh
sessions each run), the order flipping each round; the verdict is the median over balanced pairs of
rounds (one ctxgate-first, one Portkey-first) of the geometric mean of their two ratios, so an order
effect cancels (one pair of short runs moved the ratio 0.75-1.23x between runs of the bench on 2 shared
cores); only 2xx answers count as throughput there; each round prints both req/s and CPU per request.
Each proxied run also reports its process's CPU per request (user +
system from /proc; wall clock on a loaded host counts waiting for a core, CPU time does not), and
ctxgate's requests per second per core (1000 / its CPU ms per request at ${THROUGHPUT_CONNECTIONS} connections);
\`(main X)\` is the part on the process's main thread (the rest: V8's GC helper threads, libuv's pool,
render threads), \`gc S+M Y ms/req\` the gateway process's scavenges, mark-compacts and main-thread GC
pauses over the run.
The upstream reports cached_tokens as vLLM's prefix cache would (a model of it over the reference
worker's tokenizer, qwen3: loadtest/fake-upstream-cache.ts); --never-caching-upstream makes it report 0
on every call (a worker that never caches), as the bench did before.
The bare proxy, ctxgate and Portkey each run in their own process, all started with the gateway
image's Node flags (${GATEWAY_NODE_FLAGS.join(' ')}: a generic V8 GC knob, not ctxgate code), so the
three proxies are compared like for like and no row carries another's GCs.
Warm-up: before each measured run its target gets calls in chunks of ${WARMUP_CHUNK_CALLS}, at least ${WARMUP_FLOOR_CHUNKS} (V8's
optimising compiler runs for ~4,000 calls), until the CPU per call of its process (all threads: V8 compiles on helper
threads) stopped falling: the median of its last ${WARMUP_WINDOW} chunks is less than ${WARMUP_FALL_BAND * 100} % below the median of the
${WARMUP_WINDOW} before them, at most ${WARMUP_MAX_CHUNKS} chunks or
${WARMUP_MAX_S} s (then "(bound)"; "(floor)": warm at the minimum); direct's process is the upstream. Each row prints
\`warm N calls a→b µs/call\`: the chunks' CPU per call.
Each growing 1-connection row sends --c1-calls calls (default ${DEFAULT_C1_CALLS}; 0: --duration seconds, as
the other rows), so its p99 is the ~${DEFAULT_C1_CALLS / 100}th slowest call of every target alike (a 3-s row gave
ctxgate ~1,000-1,300 calls: a p99 of the ~10th slowest, which one stall moves). p99 and p99.9 (#k/N):
the k-th slowest of the row's N calls; a p99.9 is a handful of calls, not an estimate of a tail.
\`upstream cpu\` is the fake upstream's own CPU per request: it shares the host's cores with the
target, so where it is large the req/s ratios are pulled toward 1; compare CPU per request there.
Slow calls: after the stage table, the 1-connection run's slowest ${SLOW_CALLS_SHARE * 100} % of calls beside its middle ones:
their wall time split into the gateway's timed stages, GC pauses (a pause inside a stage's section is
GC, not the stage: where such pauses fell is listed) and the rest (HTTP, upstream, hops, waiting for
a core), the gateway's CPU per call (which waiting does not inflate), the share that were a
session's first call, and the stages that grew most. The fake upstream runs with --trace (each
request's span, its GC pauses) and this process records its own GC pauses (it is the load
generator: a pause stops the clock that reads every latency), so the rest is split further into the
upstream's handling (its GC among it) and the load generator's pauses, where the gateway's sections
and pauses do not already count; direct's own slowest and middle calls get the same split.
Critical path: then ctxgate's 1-connection row hop by hop, client to client, as medians over its calls:
the client's send to the gateway's parse of the request head, the head to the request body's end
(HTTP in), the body's end to the upstream request's dispatch (body parse, pipeline, routing, upstream
body), the dispatch to undici's write (undici's turn: a kept-alive socket is written from the event
loop's check phase), the write (with whatever preempts the gateway inside it: an upstream on the same
cores, woken by it), the upstream's round trip as the gateway sees it, the
answer's end read to the answer written (Node's 'finish'), and on to the client (below zero where
the client, woken by the write, ran before the gateway got back from it), from Node's and undici's
diagnostics channels and an 'end' listener in the gateway's process and this process's calls, on the
epoch clock, beside direct's call;
each with the upstream's own span (its body read to its onResponse hook) within it.
--cpu-prof DIR writes a V8 CPU profile of ctxgate's process.
--gateway-node-flags="--min-semi-space-size=64 ..." starts ctxgate's process with these Node/V8 flags after
the image's (V8 takes a flag's last value), the other proxies without: an A/B of a GC setting is this
bench run with and without them, alternating (base, flags, flags, base), compared row by row.
Several minutes with the defaults (${DEFAULT_DURATION_S} s per run, each after its warm-up). Absolute figures depend on the machine and
its load; compare the ratios from one run.`;
