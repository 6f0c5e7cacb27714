// `bench overhead`'s ingress rows: the same growing sessions through the same gateway and the
// default pipeline as Chat Completions, Anthropic Messages (/v1/messages) and OpenAI Responses
// (/v1/responses) bodies, 1 connection, the APIs taking turns for INGRESS_ROUNDS rounds; each judged
// by its median p50/p99, beside the adapters' own CPU per call measured in-process.
import { GrowingTraffic } from './growing-sessions.ts';
import { chatToAnthropic, chatToResponses } from './ingress-bodies.ts';
import { measureIngressCpu } from './ingress-cpu.ts';
import { primeSessions } from './load.ts';
import { type BenchRun, measure } from './measure.ts';
import { BENCH_MODEL } from './models.ts';
import { INGRESS_ROUNDS, type OverheadCase, type Target } from './result.ts';
import { median } from './throughput-rounds.ts';

export async function runIngressRows(run: BenchRun): Promise<void> {
  const { urls, sessions, durationS, cases, res, log } = run;
  // Same sessions, same gateway, same pipeline: only the ingress adapter differs. The APIs
  // take turns for INGRESS_ROUNDS rounds and each is judged by its median p50/p99, so machine
  // noise and warm-up order hit all three alike.
  const apis: [Target, string, ((json: string) => string) | undefined][] = [
    ['ctxgate', '/v1/chat/completions', undefined],
    ['ctxgate_anthropic', '/v1/messages', chatToAnthropic],
    ['ctxgate_responses', '/v1/responses', chatToResponses],
  ];
  log(
    `ingress APIs: growing sessions through the default pipeline, 1 connection, non-stream, ${INGRESS_ROUNDS} rounds:`,
  );
  const traffic = apis.map(([, , convert]) => new GrowingTraffic({ slots: sessions, model: BENCH_MODEL, convert }));
  const runs = new Map<Target, OverheadCase[]>();
  const renewed = apis.map(() => 0);
  for (let round = 0; round < INGRESS_ROUNDS; round++) {
    for (const [i, [target, path]] of apis.entries()) {
      const t = traffic[i];
      // Same conversations, session generations unique across APIs and rounds: no run
      // continues another run's sessions.
      for (; renewed[i] <= round * apis.length + i; renewed[i]++) t.renew();
      await primeSessions(t, { url: urls.ctxgate, path, durationS, connections: 1 });
      await measure(
        run,
        { name: `${target} ${path} r${round + 1}`, traffic: 'ingress', target, stream: false, connections: 1 },
        urls.ctxgate,
        () => t.next(),
        { path },
      );
      runs.set(target, [...(runs.get(target) ?? []), cases.at(-1)!]);
    }
  }
  const med = (t: Target, k: 'p50_ms' | 'p99_ms'): number => median(runs.get(t)!.map((c) => c[k]));
  res.ingress = {
    anthropic_added_p50_ms: med('ctxgate_anthropic', 'p50_ms') - med('ctxgate', 'p50_ms'),
    anthropic_added_p99_ms: med('ctxgate_anthropic', 'p99_ms') - med('ctxgate', 'p99_ms'),
    responses_added_p50_ms: med('ctxgate_responses', 'p50_ms') - med('ctxgate', 'p50_ms'),
    responses_added_p99_ms: med('ctxgate_responses', 'p99_ms') - med('ctxgate', 'p99_ms'),
    cpu: await measureIngressCpu(BENCH_MODEL),
  };
  const c = res.ingress.cpu;
  log(
    `adapter CPU per call, ${c.body_chars}-char session body (request + answer translation): chat ${c.chat_us.toFixed(0)} us, ` +
      `Anthropic ${c.anthropic_us.toFixed(0)} us (+${(c.anthropic_us - c.chat_us).toFixed(0)}), Responses ${c.responses_us.toFixed(0)} us (+${(c.responses_us - c.chat_us).toFixed(0)})`,
  );
  log('');
}
