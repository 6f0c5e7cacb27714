// The closing lines `bench overhead` prints after its tables: each target's verdict, from one
// result (the same figures --json gives).
import { GATEWAY_NODE_FLAGS } from '../../gateway/node-flags.ts';
import { INGRESS_ROUNDS, THROUGHPUT_CONNECTIONS, type OverheadResult } from './result.ts';

export function formatSummary(res: OverheadResult): string {
  const out: string[] = [];
  const f = (n: number | undefined, d = 2): string => (n === undefined ? 'n/a' : n.toFixed(d));
  const gr = res.growing;
  if (gr) {
    const ok = (b: boolean): string => (b ? 'met' : 'NOT met');
    out.push(
      `growing sessions, 1 connection, added over direct: ctxgate p50 ${f(gr.added_p50_ms)} ms / p99 ${f(gr.added_p99_ms)} ms ` +
        `(target <= 1 / <= 5: ${ok(gr.added_p50_ms <= 1 && gr.added_p99_ms <= 5)}; the p99: ctxgate's #${gr.p99_calls.ctxgate_rank} slowest of ${gr.p99_calls.ctxgate} calls ` +
        `minus direct's #${gr.p99_calls.direct_rank} of ${gr.p99_calls.direct}), p99.9 ${f(gr.added_p999_ms)} ms ` +
        `(ctxgate's #${gr.p999_calls.ctxgate_rank} slowest of ${gr.p999_calls.ctxgate} calls minus direct's #${gr.p999_calls.direct_rank} of ${gr.p999_calls.direct}: a handful of calls, not a tail estimate); ` +
        `Portkey (${res.gateway_node_flags ? `Node flags ${GATEWAY_NODE_FLAGS.join(' ')}; ctxgate also ${res.gateway_node_flags.join(' ')}` : `same Node flags: ${GATEWAY_NODE_FLAGS.join(' ')}`}) ${f(gr.portkey_added_p50_ms)} / ${f(gr.portkey_added_p99_ms)} ms; ` +
        `bare proxy ${f(gr.bare_added_p50_ms)} / ${f(gr.bare_added_p99_ms)} ms\n`,
    );
    // The verdict reads the paired rounds' median when they ran; one pair of ~3 s runs is noise.
    const tr = gr.throughput_rounds;
    const ratio = tr ? tr.median_ratio : gr.throughput_ratio_vs_portkey;
    out.push(
      `growing sessions, ${THROUGHPUT_CONNECTIONS} connections: ctxgate throughput ${f(ratio)}x Portkey's` +
        (tr
          ? ` (median of ${tr.pair_ratios.length} balanced pairs of rounds, single rounds ${f(tr.min_ratio)}-${f(tr.max_ratio)}x; the single run above ${f(gr.throughput_ratio_vs_portkey)}x)`
          : '') +
        ` (target >= 1: ${ratio === undefined ? 'n/a' : ok(ratio >= 1)}), ${f(gr.throughput_ratio_vs_bare_proxy)}x the bare proxy's\n`,
    );
    const cpu = gr.cpu_ms_per_req;
    out.push(
      `growing sessions, ${THROUGHPUT_CONNECTIONS} connections, CPU per request (process user+system; unlike wall clock, not inflated by a loaded host): ` +
        `ctxgate ${f(cpu.ctxgate)} ms, Portkey ${f(cpu.portkey)} ms, bare proxy ${f(cpu.bare_proxy)} ms; ` +
        `ctxgate ${f(cpu.portkey && cpu.ctxgate ? cpu.ctxgate / cpu.portkey : undefined)}x Portkey's CPU; plan for ~${f(gr.ctxgate_rps_per_core, 0)} req/s per core\n`,
    );
    const upc = gr.upstream_cpu_ms_per_req;
    out.push(
      `growing sessions, ${THROUGHPUT_CONNECTIONS} connections, the fake upstream's own CPU per request (same cores; pulls req/s ratios toward 1): ` +
        `direct ${f(upc.direct)} ms, ctxgate ${f(upc.ctxgate)} ms, Portkey ${f(upc.portkey)} ms, bare proxy ${f(upc.bare_proxy)} ms\n`,
    );
    const sp = gr.ctxgate_cpu_split;
    if (sp)
      out.push(
        `growing sessions, ${THROUGHPUT_CONNECTIONS} connections, ctxgate's CPU per request by thread: main thread ${f(sp.main_ms)} ms ` +
          `(GC pauses ${f(sp.gc_pause_ms)} ms of it, wall clock), other threads ${f(sp.other_threads_ms)} ms (V8's GC helpers, libuv's pool, render threads)\n`,
      );
  }
  const ig = res.ingress;
  if (ig) {
    const ok = (n: number): string => (n <= 0.3 ? 'met' : 'NOT met');
    out.push(
      `ingress APIs over chat, 1 connection (wall clock, medians of ${INGRESS_ROUNDS} rounds): Anthropic added p50 ${f(ig.anthropic_added_p50_ms)} ms / p99 ${f(ig.anthropic_added_p99_ms)} ms; ` +
        `Responses added p50 ${f(ig.responses_added_p50_ms)} ms / p99 ${f(ig.responses_added_p99_ms)} ms\n` +
        `adapter CPU over chat per call: Anthropic +${f((ig.cpu.anthropic_us - ig.cpu.chat_us) / 1000, 3)} ms (target <= 0.3: ${ok((ig.cpu.anthropic_us - ig.cpu.chat_us) / 1000)}), ` +
        `Responses +${f((ig.cpu.responses_us - ig.cpu.chat_us) / 1000, 3)} ms (target <= 0.3: ${ok((ig.cpu.responses_us - ig.cpu.chat_us) / 1000)})\n`,
    );
  }
  const fx = res.fixed;
  if (fx) {
    out.push(
      `fixed 16k non-stream, passthrough vs bare proxy: added p50 ${f(fx.added_p50_ms)} ms, added p99 ${f(fx.added_p99_ms)} ms, throughput ${f(fx.throughput_ratio_vs_bare_proxy)}x; ` +
        `CPU per request ${f(fx.cpu_ms_per_req.passthrough, 3)} vs ${f(fx.cpu_ms_per_req.bare_proxy, 3)} ms\n`,
    );
  }
  return out.join('');
}
