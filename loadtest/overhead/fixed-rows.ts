// `bench overhead`'s fixed-body rows: ~1k- and ~16k-token chat bodies (an agent-like history of
// tool outputs), stream and not, at --connections, directly, through the bare proxy and through
// ctxgate with `layout: passthrough` (a labelled extra: the default pipeline is the growing rows').
// Result: ctxgate passthrough against the bare proxy on the 16k non-stream body.
import { type BenchRun, measure } from './measure.ts';
import { PASSTHROUGH_MODEL } from './models.ts';
import type { Target } from './result.ts';

const BYTES_PER_TOKEN = 4;

/** A chat body of about `tokens` tokens: an agent-like history of tool outputs. */
export function chatBody(tokens: number, stream: boolean, model = PASSTHROUGH_MODEL): string {
  const line = 'src/service/handler.ts:142 validate_claims() returned status=ok elapsed=12ms\n';
  const chunk = line.repeat(Math.ceil((tokens * BYTES_PER_TOKEN) / 4 / line.length));
  const messages = [
    { role: 'system', content: 'You are a coding agent.' },
    { role: 'user', content: chunk },
    {
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'c1', type: 'function', function: { name: 'run', arguments: '{"cmd":"npm test"}' } }],
    },
    { role: 'tool', tool_call_id: 'c1', content: chunk },
    { role: 'assistant', content: chunk },
    { role: 'user', content: chunk },
  ];
  return JSON.stringify({ model, messages, max_tokens: 16, temperature: 0, ...(stream ? { stream: true } : {}) });
}

export async function runFixedRows(run: BenchRun): Promise<void> {
  const { up, urls, connections, cases, res, log } = run;
  const upstream = up.line.trim();
  const targets: [Target, string][] = [
    ['direct', upstream],
    ['bare_proxy', urls.bare],
    ['ctxgate_passthrough', urls.ctxgate],
  ];
  log(`fixed bodies, ${connections} connections (ctxgate: layout passthrough, a labelled extra):`);
  for (const tokens of [1000, 16000]) {
    for (const stream of [false, true]) {
      const body = chatBody(tokens, stream);
      for (const [target, url] of targets) {
        await measure(
          run,
          {
            name: `${target} ${tokens / 1000}k ${stream ? 'stream' : 'non-stream'}`,
            traffic: 'fixed',
            target,
            tokens,
            stream,
            connections,
          },
          url,
          body,
        );
      }
    }
  }
  const pick = (t: Target) =>
    cases.find((c) => c.traffic === 'fixed' && c.target === t && c.tokens === 16000 && !c.stream)!;
  const bare = pick('bare_proxy');
  const gw = pick('ctxgate_passthrough');
  res.fixed = {
    added_p50_ms: gw.p50_ms - bare.p50_ms,
    added_p99_ms: gw.p99_ms - bare.p99_ms,
    throughput_ratio_vs_bare_proxy: bare.rps > 0 ? gw.rps / bare.rps : 0,
    cpu_ms_per_req: { passthrough: gw.cpu_ms_per_req, bare_proxy: bare.cpu_ms_per_req },
  };
}
