import { createServer, type Server } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { parseEngineMetrics, startScraper } from '../../kvplanner/load-signals.ts';
import { workers } from './fixtures.ts';

const VLLM = `# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="m"} 3.0
vllm:num_requests_waiting{engine="1",model_name="m"} 2.0
vllm:num_requests_running{engine="0",model_name="m"} 7.0
vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.25
vllm:kv_cache_usage_perc{engine="1",model_name="m"} 0.5
vllm:cache_config_info{block_size="16",cache_dtype="auto",num_gpu_blocks="1000"} 1.0
vllm:prompt_tokens_total{model_name="m"} 1.2e+06
`;
const SGLANG = `sglang:num_queue_reqs{model_name="m"} 4
sglang:num_running_reqs{model_name="m"} 9
sglang:token_usage{model_name="m"} 0.75
`;

const servers: Server[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.close();
});

describe('parseEngineMetrics', () => {
  it('reads vLLM and SGLang signals', () => {
    expect(parseEngineMetrics(VLLM)).toEqual({ waiting: 5, running: 7, kvUsage: 0.5, kvTokens: 16_000 });
    expect(parseEngineMetrics(SGLANG)).toEqual({ waiting: 4, running: 9, kvUsage: 0.75 });
    expect(parseEngineMetrics('garbage\n# nothing\nfoo NaN')).toEqual({});
  });
});

describe('startScraper', () => {
  it('fills WorkerView.engine from /metrics and clears it when a worker stops answering', async () => {
    const srv = createServer((req, res) => {
      if (req.url === '/metrics') res.end(VLLM);
      else res.writeHead(404).end();
    });
    servers.push(srv);
    const port = await new Promise<number>((r) =>
      srv.listen(0, '127.0.0.1', () => r((srv.address() as { port: number }).port)),
    );
    const ws = workers(2);
    ws[0].url = `http://127.0.0.1:${port}`;
    ws[1].url = 'http://127.0.0.1:1'; // nothing listens there
    const errors: string[] = [];
    // w1 is refused at once; the generous timeout is for w0 on a loaded machine
    const sc = startScraper(ws, 60_000, { timeoutMs: 10_000, onError: (w) => errors.push(w.id) });
    await sc.scrapeOnce();
    sc.stop();
    expect(ws[0].engine).toEqual({ waiting: 5, running: 7, kvUsage: 0.5 });
    expect(ws[0].kvTokens).toBe(16_000);
    expect(ws[1].engine).toBeUndefined();
    expect(errors).toEqual(['w1']);
  });
});
