// Prometheus metrics named as the engines name them, one Registry per worker (many workers
// share a process in tests and benchmarks). vLLM counts prefix-cache queries and hits in
// tokens; SGLang exposes a hit-rate gauge. Both label by model_name.
import { Counter, Gauge, Histogram, Registry } from 'prom-client';

const TTFT_BUCKETS = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80];

export interface RequestSample {
  promptTokens: number;
  cachedTokens: number;
  outputTokens: number;
  ttftS: number;
}

export interface WorkerMetrics {
  registry: Registry;
  observe(s: RequestSample): void;
  setLoad(running: number, waiting: number, usage: number): void;
}

export function createMetrics(flavor: 'vllm' | 'sglang', model: string): WorkerMetrics {
  const registry = new Registry();
  const labelNames = ['model_name'] as const;
  const l = { model_name: model };
  if (flavor === 'vllm') {
    const queries = new Counter({
      name: 'vllm:prefix_cache_queries_total',
      help: 'Prefix cache queries, in tokens.',
      labelNames,
      registers: [registry],
    });
    const hits = new Counter({
      name: 'vllm:prefix_cache_hits_total',
      help: 'Prefix cache hits, in tokens.',
      labelNames,
      registers: [registry],
    });
    const ttft = new Histogram({
      name: 'vllm:time_to_first_token_seconds',
      help: 'Histogram of time to first token in seconds.',
      labelNames,
      buckets: TTFT_BUCKETS,
      registers: [registry],
    });
    const running = new Gauge({
      name: 'vllm:num_requests_running',
      help: 'Number of requests in model execution batches.',
      labelNames,
      registers: [registry],
    });
    const waiting = new Gauge({
      name: 'vllm:num_requests_waiting',
      help: 'Number of requests waiting to be processed.',
      labelNames,
      registers: [registry],
    });
    const usage = new Gauge({
      name: 'vllm:kv_cache_usage_perc',
      help: 'KV-cache usage. 1 means 100 percent usage.',
      labelNames,
      registers: [registry],
    });
    const prompt = new Counter({
      name: 'vllm:prompt_tokens_total',
      help: 'Number of prefill tokens processed.',
      labelNames,
      registers: [registry],
    });
    const gen = new Counter({
      name: 'vllm:generation_tokens_total',
      help: 'Number of generation tokens processed.',
      labelNames,
      registers: [registry],
    });
    for (const m of [queries, hits, prompt, gen]) m.inc(l, 0);
    return {
      registry,
      observe: (s) => {
        queries.inc(l, s.promptTokens);
        hits.inc(l, s.cachedTokens);
        prompt.inc(l, s.promptTokens);
        gen.inc(l, s.outputTokens);
        ttft.observe(l, s.ttftS);
      },
      setLoad: (r, w, u) => {
        running.set(l, r);
        waiting.set(l, w);
        usage.set(l, u);
      },
    };
  }
  const hitRate = new Gauge({
    name: 'sglang:cache_hit_rate',
    help: 'The prefix cache hit rate.',
    labelNames,
    registers: [registry],
  });
  const ttft = new Histogram({
    name: 'sglang:time_to_first_token_seconds',
    help: 'Histogram of time to first token in seconds.',
    labelNames,
    buckets: TTFT_BUCKETS,
    registers: [registry],
  });
  const queue = new Gauge({
    name: 'sglang:num_queue_reqs',
    help: 'The number of requests in the waiting queue.',
    labelNames,
    registers: [registry],
  });
  const running = new Gauge({
    name: 'sglang:num_running_reqs',
    help: 'The number of running requests.',
    labelNames,
    registers: [registry],
  });
  const usage = new Gauge({ name: 'sglang:token_usage', help: 'The token usage.', labelNames, registers: [registry] });
  const prompt = new Counter({
    name: 'sglang:prompt_tokens_total',
    help: 'Number of prefill tokens processed.',
    labelNames,
    registers: [registry],
  });
  const gen = new Counter({
    name: 'sglang:generation_tokens_total',
    help: 'Number of generation tokens processed.',
    labelNames,
    registers: [registry],
  });
  let q = 0;
  let h = 0;
  hitRate.set(l, 0);
  return {
    registry,
    observe: (s) => {
      q += s.promptTokens;
      h += s.cachedTokens;
      hitRate.set(l, q ? h / q : 0);
      prompt.inc(l, s.promptTokens);
      gen.inc(l, s.outputTokens);
      ttft.observe(l, s.ttftS);
    },
    setLoad: (r, w, u) => {
      running.set(l, r);
      queue.set(l, w);
      usage.set(l, u);
    },
  };
}
