// The one-connection critical path of `bench overhead`'s growing rows: what a call waits on, hop by
// hop, from the client's send to the last byte back, as medians over the row's calls. ctxgate's
// process records, per request, when its HTTP server parsed the request's head and emitted the
// body's end, when undici created the upstream request (the dispatch), began writing it (its
// headers), wrote its body and had the answer's end, and when the answer was written (Node's and
// undici's diagnostics channels, and an 'end' listener on the request: bench only,
// overhead-proxies.ts). So the section before the send splits into the request body's arrival
// (HTTP in), the gateway's work up to the dispatch (body parse, pipeline, routing, upstream body),
// undici's turn (a kept-alive socket is written from the check phase of the event loop) and the
// write itself. The write's hop holds whatever preempts the gateway inside it: where the upstream
// shares the gateway's cores, the woken upstream may run its request there and then, so that hop
// grows and the round trip's shrinks by as much. The same holds on the way back: the answer's point
// is Node's 'finish' (after the write returned and its callback ran), so where the woken client
// preempts the gateway inside that write, the client has the answer first and the last hop reads
// below zero (s42: -0.20 ms in one slot run): read the two answer hops together. The fake
// upstream keeps each request's [body read, answer sent] (fake-upstream.ts --trace); the client
// (this process) each call's end and latency. All three on the epoch clock (timeOrigin + now), so
// the hops between processes are differences of two processes' clocks: a few µs of skew, not more.
// At 1 connection the calls are sequential, so the i-th event of each list is the i-th call's.
// Direct's call holds the same upstream round trip: what ctxgate adds is the hops around it. The
// upstream's own span is printed beside (not a hop: its end is taken after the answer's write, so
// the hop after it would read below zero where the reader is quick).
// Cost: in the gateway, six channel callbacks and one 'end' listener a request, each one array
// write (bounded); here O(calls log calls) for the medians.
import dc from 'node:diagnostics_channel';

/** Requests a gateway keeps the path of after a reset (the growing c1 row's calls fit). */
export const PATH_MAX = 1 << 15;

/** Epoch times (ms) of each request's points in the gateway, in order, one list a point. */
export interface GatewayPath {
  /** The HTTP server parsed the request's head (http.server.request.start). */
  arrival: number[];
  /** The request emitted its body's end (the last body byte read; an 'end' listener added at the head). */
  bodyRead: number[];
  /** undici created the upstream request: the gateway's dispatch (undici:request:create). */
  dispatched: number[];
  /** undici began writing the request: its headers (undici:client:sendHeaders). */
  writing: number[];
  /** undici wrote the whole upstream body (undici:request:bodySent). */
  written: number[];
  /** undici had the upstream body's end (undici:request:trailers). */
  upEnd: number[];
  /** The answer's last byte was handed to the socket (http.server.response.finish). */
  answered: number[];
}

const epochNow = (): number => performance.timeOrigin + performance.now();

/** Subscribes the gateway process's channels; `reset` forgets the points so far, `path` reads them. */
export function watchGatewayPath(): { reset(): void; path(): GatewayPath } {
  const lists: GatewayPath = {
    arrival: [],
    bodyRead: [],
    dispatched: [],
    writing: [],
    written: [],
    upEnd: [],
    answered: [],
  };
  const at = (list: number[]) => () => {
    if (list.length < PATH_MAX) list.push(epochNow());
  };
  const bodyRead = at(lists.bodyRead);
  // Only the calls' own upstream requests: the engine-metrics scraper's GET /metrics (admission
  // dispatch, kvplanner/load-signals.ts) goes through undici too, and one entry more in a list
  // pairs every later call with its neighbour's point.
  const upstreamCall = (list: number[]) => (m: unknown) => {
    if ((m as { request?: { method?: string } }).request?.method === 'POST') at(list)();
  };
  const arrival = at(lists.arrival);
  dc.subscribe('http.server.request.start', (m: unknown) => {
    arrival();
    (m as { request: { once(e: 'end', f: () => void): unknown } }).request.once('end', bodyRead);
  });
  dc.subscribe('undici:request:create', upstreamCall(lists.dispatched));
  dc.subscribe('undici:client:sendHeaders', upstreamCall(lists.writing));
  dc.subscribe('undici:request:bodySent', upstreamCall(lists.written));
  dc.subscribe('undici:request:trailers', upstreamCall(lists.upEnd));
  dc.subscribe('http.server.response.finish', at(lists.answered));
  return {
    reset() {
      for (const l of Object.values(lists) as number[][]) l.length = 0;
    },
    path: () => lists,
  };
}

/** Median milliseconds of each hop over the calls, and the median call as the client saw it. */
export interface CriticalPath {
  calls: number;
  /** The client's median latency over those calls. */
  call_ms: number;
  /** The hops in order, client to client (their medians add up to about the median call). */
  hops: { hop: string; ms: number }[];
  /** The upstream's own span within the hop that holds it (body read to its onResponse hook, which
   *  runs after its answer's write: it reads a little long), not one of the hops. */
  upstream_ms: number;
}

function median(xs: number[]): number {
  if (xs.length === 0) return Number.NaN;
  const s = xs.slice().sort((a, b) => a - b);
  return s[s.length >> 1];
}

/** The client's calls: each one's end (epoch ms) and latency. */
interface ClientCalls {
  end: number[];
  ms: number[];
}

/** Each list's events from the run's start on (a reset may leave a straggler of the call before). */
function since(list: readonly number[], start: number): number[] {
  return list.filter((t) => t >= start);
}

/** ctxgate's critical path: client -> gateway -> upstream -> gateway -> client, hop by hop. */
export function gatewayCriticalPath(
  calls: ClientCalls,
  gw: GatewayPath,
  upstream: readonly [number, number][],
  start: number,
): CriticalPath {
  const arrival = since(gw.arrival, start);
  const bodyRead = since(gw.bodyRead, start);
  const dispatched = since(gw.dispatched, start);
  const writing = since(gw.writing, start);
  const written = since(gw.written, start);
  const upEnd = since(gw.upEnd, start);
  const answered = since(gw.answered, start);
  const spans = upstream.filter((s) => s[0] >= start);
  const n = Math.min(
    calls.end.length,
    arrival.length,
    bodyRead.length,
    dispatched.length,
    writing.length,
    written.length,
    upEnd.length,
    answered.length,
  );
  const hop = (f: (i: number) => number): number => median(Array.from({ length: n }, (_, i) => f(i)));
  const sent = (i: number): number => calls.end[i] - calls.ms[i];
  return {
    calls: n,
    call_ms: median(calls.ms.slice(0, n)),
    hops: [
      { hop: 'client sends -> gateway parsed the head', ms: hop((i) => arrival[i] - sent(i)) },
      { hop: 'head -> request body read (HTTP in)', ms: hop((i) => bodyRead[i] - arrival[i]) },
      {
        hop: 'body read -> upstream request dispatched (parse, pipeline, routing)',
        ms: hop((i) => dispatched[i] - bodyRead[i]),
      },
      { hop: "dispatched -> undici writes (undici's turn)", ms: hop((i) => writing[i] - dispatched[i]) },
      { hop: 'undici writes -> upstream body written (the write)', ms: hop((i) => written[i] - writing[i]) },
      {
        hop: "written -> gateway read the answer's end (the upstream's round trip)",
        ms: hop((i) => upEnd[i] - written[i]),
      },
      { hop: 'answer read -> answer written to the client', ms: hop((i) => answered[i] - upEnd[i]) },
      { hop: 'answer written -> the client has it', ms: hop((i) => calls.end[i] - answered[i]) },
    ],
    upstream_ms: median(spans.slice(0, n).map((s) => s[1] - s[0])),
  };
}

/** Direct's path: the call itself, with the upstream's span within it. */
export function directCriticalPath(
  calls: ClientCalls,
  upstream: readonly [number, number][],
  start: number,
): CriticalPath {
  const spans = upstream.filter((s) => s[0] >= start);
  const n = Math.min(calls.end.length, spans.length);
  const call = median(calls.ms.slice(0, n));
  return {
    calls: n,
    call_ms: call,
    hops: [{ hop: 'client sends -> the client has the answer', ms: call }],
    upstream_ms: median(spans.slice(0, n).map((s) => s[1] - s[0])),
  };
}

export function formatCriticalPath(name: string, p: CriticalPath): string {
  const w = Math.max(...p.hops.map((h) => h.hop.length));
  const sum = p.hops.reduce((a, h) => a + h.ms, 0);
  return [
    `${name}'s one-connection critical path (median ms of each hop over ${p.calls} calls; the processes' epoch clocks):`,
    ...p.hops.map((h) => `  ${h.hop.padEnd(w)}  ${h.ms.toFixed(3).padStart(7)}`),
    `  ${'sum of the medians'.padEnd(w)}  ${sum.toFixed(3).padStart(7)}  (the median call: ${p.call_ms.toFixed(3)}; ` +
      `the upstream's own span within it: ${p.upstream_ms.toFixed(3)}, body read to its onResponse hook)`,
  ].join('\n');
}
