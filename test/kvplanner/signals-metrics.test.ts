import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { connect } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { parseEngineMetrics, SCRAPE_BACKOFF_MAX_MS, startScraper } from '../../kvplanner/load-signals.ts';
import { until } from '../helpers/until.ts';
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

describe('startScraper: idle and workers without engine signals', () => {
  /** A /metrics server whose answer can change; counts the GETs it got. */
  async function metricsServer(answer: { status: number; body: string }) {
    const got = { gets: 0 };
    const srv = createServer((req, res) => {
      if (req.url === '/metrics') got.gets++;
      res.writeHead(answer.status).end(answer.body);
    });
    servers.push(srv);
    const port = await new Promise<number>((r) =>
      srv.listen(0, '127.0.0.1', () => r((srv.address() as { port: number }).port)),
    );
    return { url: `http://127.0.0.1:${port}`, got };
  }

  it('a 404 or a page without the engine series: no signals, reported once, asked again only after a doubling pause', async () => {
    const answer = { status: 404, body: 'not found' };
    const m = await metricsServer(answer);
    const ws = workers(1);
    ws[0].url = m.url;
    let t = 1_000;
    const none: string[] = [];
    const back: string[] = [];
    const errors: string[] = [];
    const sc = startScraper(ws, 60_000, {
      timeoutMs: 10_000,
      now: () => t,
      onNoSignals: (w, reason) => none.push(`${w.id} ${reason}`),
      onSignals: (w) => back.push(w.id),
      onError: (w) => errors.push(w.id),
    });
    sc.stop();
    await sc.scrapeOnce();
    expect(m.got.gets).toBe(1);
    expect(ws[0].engine).toBeUndefined();
    expect(none).toEqual(['w0 GET /metrics: HTTP 404']);
    // backed off: 60 s × 2 capped at SCRAPE_BACKOFF_MAX_MS (60 s)
    t += SCRAPE_BACKOFF_MAX_MS - 1;
    await sc.scrapeOnce();
    expect(m.got.gets).toBe(1);
    t += 1;
    answer.status = 200;
    answer.body = 'http_requests_total 5\n';
    await sc.scrapeOnce();
    expect(m.got.gets).toBe(2);
    // still none of the engine's series: the same episode, not reported again
    expect(none).toHaveLength(1);
    await sc.scrapeOnce();
    expect(m.got.gets).toBe(2);
    t += SCRAPE_BACKOFF_MAX_MS;
    answer.body = VLLM;
    await sc.scrapeOnce();
    expect(m.got.gets).toBe(3);
    expect(ws[0].engine).toEqual({ waiting: 5, running: 7, kvUsage: 0.5 });
    expect(back).toEqual(['w0']);
    await sc.scrapeOnce();
    expect(m.got.gets).toBe(4); // no pause once it answers again
    expect(errors).toEqual([]);
  });

  it('the pause doubles from the interval', async () => {
    const m = await metricsServer({ status: 404, body: '' });
    const ws = workers(1);
    ws[0].url = m.url;
    let t = 0;
    const sc = startScraper(ws, 1_000, { timeoutMs: 10_000, now: () => t });
    sc.stop();
    await sc.scrapeOnce();
    expect(m.got.gets).toBe(1);
    for (const pause of [2_000, 4_000, 8_000]) {
      t += pause - 1;
      await sc.scrapeOnce();
      const before = m.got.gets;
      t += 1;
      await sc.scrapeOnce();
      expect(m.got.gets).toBe(before + 1);
    }
  });

  it('while the model has nothing in flight or held it sends no GETs, and drops the last round’s counts', async () => {
    const m = await metricsServer({ status: 200, body: VLLM });
    const ws = workers(1);
    ws[0].url = m.url;
    let active = false;
    const sc = startScraper(ws, 5, { timeoutMs: 10_000, active: () => active });
    try {
      // nothing at start: an idle gateway sends no GET, and no round has landed
      await new Promise((r) => setTimeout(r, 50));
      expect(m.got.gets).toBe(0);
      expect(sc.scraped).toBe(false);
      await sc.scrapeOnce();
      expect(sc.scraped).toBe(true);
      expect(m.got.gets).toBe(1);
      expect(ws[0].engine).toEqual({ waiting: 5, running: 7, kvUsage: 0.5 });
      await new Promise((r) => setTimeout(r, 100));
      expect(m.got.gets).toBe(1);
      // none of this gateway's calls waits or runs; KV usage unknown until the next round
      expect(ws[0].engine).toEqual({ waiting: 0, running: 0 });
      active = true;
      for (let i = 0; i < 400 && m.got.gets < 3; i++) await new Promise((r) => setTimeout(r, 5));
      expect(m.got.gets).toBeGreaterThanOrEqual(3);
    } finally {
      sc.stop();
    }
  });
});

describe('startScraper: answers other than 200, unhealthy and unreachable workers (review s30 F2, F6)', () => {
  async function statusServer(status: number) {
    const got = { gets: 0 };
    const srv = createServer((_req, res) => {
      got.gets++;
      res.writeHead(status).end('no metrics here');
    });
    servers.push(srv);
    const port = await new Promise<number>((r) =>
      srv.listen(0, '127.0.0.1', () => r((srv.address() as { port: number }).port)),
    );
    return { url: `http://127.0.0.1:${port}`, got };
  }

  it('401, 403, 405, 501 and 503 are backed off and reported once like a 404, not polled every round', async () => {
    const statuses = [401, 403, 405, 501, 503];
    const ms = await Promise.all(statuses.map(statusServer));
    const ws = workers(statuses.length);
    ms.forEach((m, i) => {
      ws[i].url = m.url;
      ws[i].engine = { waiting: 9, running: 1 };
    });
    let t = 1_000;
    const none: string[] = [];
    const errors: string[] = [];
    const sc = startScraper(ws, 1_000, {
      timeoutMs: 10_000,
      now: () => t,
      onNoSignals: (w, reason) => none.push(`${w.id} ${reason}`),
      onError: (w) => errors.push(w.id),
    });
    sc.stop();
    await sc.scrapeOnce();
    await sc.scrapeOnce();
    t += 1_999; // inside the first pause (interval × 2)
    await sc.scrapeOnce();
    expect(ms.map((m) => m.got.gets)).toEqual(statuses.map(() => 1));
    expect(none).toEqual(statuses.map((s, i) => `w${i} GET /metrics: HTTP ${s}`));
    expect(errors).toEqual([]);
    for (const w of ws) expect(w.engine).toBeUndefined();
    t += 1;
    await sc.scrapeOnce();
    expect(ms.map((m) => m.got.gets)).toEqual(statuses.map(() => 2));
    expect(none).toHaveLength(statuses.length); // the same episode: not reported again
  });

  it('an unhealthy worker is not asked (its last signals dropped); asked again once healthy', async () => {
    const m = await statusServer(200);
    const ws = workers(1);
    ws[0].url = m.url;
    ws[0].healthy = false;
    ws[0].engine = { waiting: 3, running: 2 };
    const sc = startScraper(ws, 60_000, { timeoutMs: 10_000 });
    sc.stop();
    await sc.scrapeOnce();
    expect(m.got.gets).toBe(0);
    expect(ws[0].engine).toBeUndefined();
    ws[0].healthy = true;
    await sc.scrapeOnce();
    expect(m.got.gets).toBe(1);
  });

  it('a worker that drops SYNs ends its part of the round at the scrape timeout, not at undici’s 10 s connect timeout', async () => {
    // A listener whose process never accepts (its event loop is blocked): once its accept queue
    // (backlog 1: two connections) is full the kernel drops further SYNs, as a dead node or a firewall does.
    const child = spawn(
      process.execPath,
      [
        '-e',
        "const s=require('net').createServer();s.listen({port:0,host:'127.0.0.1',backlog:1},()=>{console.log(s.address().port);const end=Date.now()+60000;while(Date.now()<end){}})",
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    try {
      const port = await new Promise<number>((r) => child.stdout.once('data', (d) => r(Number(String(d).trim()))));
      // fill the accept queue (these connects complete in the kernel or hang: never awaited)
      const fillers = Array.from({ length: 6 }, () => connect(port, '127.0.0.1').on('error', () => {}));
      await new Promise((r) => setTimeout(r, 200));
      const ws = workers(1);
      ws[0].url = `http://127.0.0.1:${port}`;
      const errors: string[] = [];
      const sc = startScraper(ws, 60_000, { timeoutMs: 300, onError: (w, err) => errors.push(`${w.id} ${err.name}`) });
      sc.stop();
      const ended = await Promise.race([
        sc.scrapeOnce().then(() => 'round ended'),
        new Promise((r) => setTimeout(() => r('still connecting after 6 s'), 6_000)),
      ]);
      expect(ended).toBe('round ended');
      expect(errors).toEqual(['w0 ConnectTimeoutError']);
      for (const f of fillers) f.destroy();
    } finally {
      child.kill('SIGKILL');
    }
  }, 15_000);
});

describe('startScraper: its connections (review s30 F10)', () => {
  it('stop() closes the scraper’s keep-alive connections, also those of a round asked for after stop', async () => {
    const open = new Set<import('node:net').Socket>();
    const srv = createServer((_req, res) => {
      // the engine lets idle connections live 10 minutes: only the client closing ends them soon
      res.setHeader('keep-alive', 'timeout=600');
      res.end(VLLM);
    });
    srv.keepAliveTimeout = 600_000; // nor does the server end them (its default: 5 s)
    srv.on('connection', (sock) => {
      open.add(sock);
      sock.on('close', () => open.delete(sock));
    });
    servers.push(srv);
    const port = await new Promise<number>((r) =>
      srv.listen(0, '127.0.0.1', () => r((srv.address() as { port: number }).port)),
    );
    const ws = workers(1);
    ws[0].url = `http://127.0.0.1:${port}`;
    const sc = startScraper(ws, 60_000, { timeoutMs: 10_000 });
    await sc.scrapeOnce();
    expect(ws[0].engine).toEqual({ waiting: 5, running: 7, kvUsage: 0.5 });
    expect(open.size).toBe(1); // kept alive between rounds
    sc.stop();
    await until(() => open.size === 0);
    await sc.scrapeOnce();
    expect(ws[0].engine).toEqual({ waiting: 5, running: 7, kvUsage: 0.5 });
    await until(() => open.size === 0);
  });
});
