// bench hostile's checkers must be able to fail: a planted marker that reaches the worker
// unescaped (or as a look-alike) is counted, the gateway's escaped form is not; a secret value in a
// stored file is found; the bench's gateway config is a valid config with two keyed tenants and the
// render pool setting it was given.
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../gateway/config/load.ts';
import { DEFAULTS, gatewayConfig } from '../../loadtest/bench-hostile.ts';
import { startSimWorker } from '../../loadtest/sim-worker/index.ts';
import { DEFAULT_OPTIONS, parseWorkerArgs } from '../../loadtest/sim-worker/options.ts';
import { MARKERS, plantedSecrets, secretsFound, unescapedMarkers } from '../../loadtest/hostile/probes.ts';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { bigPromptsOffThread, bigText, emptyTally, noSpaceText } from '../../loadtest/hostile/traffic.ts';
import { escapeRequest } from '../../middleware/redaction/framing.ts';
import { parse } from 'yaml';

const body = (content: string, args = '{}') =>
  JSON.stringify({
    model: 'm',
    messages: [
      { role: 'user', content },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'c', type: 'function', function: { name: 'bash', arguments: args } }],
      },
    ],
  });

describe('bench hostile checkers', () => {
  it('counts planted markers and look-alikes that reach the worker, not the escaped ones', () => {
    const raw = MARKERS.filter((m) => !m.includes('\u200b')).map((m) => body(`${m} PLANTED-user`));
    expect(unescapedMarkers(raw)).toBe(raw.length);
    expect(unescapedMarkers([body('ok', JSON.stringify({ cmd: '[ctxgate] PLANTED-args' }))])).toBe(1);
    const escaped = raw.map((b) => JSON.stringify(escapeRequest(JSON.parse(b))));
    expect(unescapedMarkers(escaped)).toBe(0);
    expect(unescapedMarkers([body('[ctxgate] a gateway note, not planted')])).toBe(0);
  });

  it('finds a planted secret value in stored text', () => {
    const s = plantedSecrets();
    expect(s.values.length).toBe(s.texts.length);
    for (let i = 0; i < s.values.length; i++) expect(s.texts[i]).toContain(s.values[i]);
    const files = [
      { path: 'capture.jsonl', text: `{"content":"${s.texts[4]}"}` },
      { path: 'ledger', text: 'nothing here' },
    ];
    expect(secretsFound(s.values, files)).toMatchObject({ count: 1 });
  });

  it('writes a valid gateway config: two keyed tenants, the probe model with capture, the pool setting', () => {
    const yaml = gatewayConfig({
      urls: ['http://127.0.0.1:1', 'http://127.0.0.1:2'],
      probeUrl: 'http://127.0.0.1:3',
      dir: '/tmp/x',
      poolThreads: 0,
    });
    const cfg = parseConfig(parse(yaml), 'bench', {});
    expect(cfg.auth.mode).toBe('keys');
    expect(cfg.render_pool.threads).toBe(0);
    expect(cfg.models.map((m) => [m.name, m.capture.enabled, m.workers.length])).toEqual([
      ['hostile-model', false, 2],
      ['hostile-probe', true, 1],
    ]);
  });

  it('attack texts have the requested size and shape', () => {
    expect(bigText(400_000, 1).length).toBe(400_000);
    expect(bigText(1000, 1)).not.toBe(bigText(1000, 2));
    const ns = noSpaceText(100_000, 3);
    expect(ns.length).toBe(100_000);
    expect(/\s/.test(ns)).toBe(false);
  });

  it('tenant A on its own thread sends distinct big prompts with its key; every call is in the tally', async () => {
    const seen: { auth?: string; content: string }[] = [];
    // Each answer takes 1 s: two streams, five calls.
    const server = createServer((req, res) => {
      let text = '';
      req.setEncoding('utf8');
      req.on('data', (c: string) => void (text += c));
      req.on('end', () => {
        seen.push({ auth: req.headers.authorization, content: JSON.parse(text).messages[0].content });
        const status = seen.length === 1 ? 400 : 200;
        setTimeout(() => res.writeHead(status, { 'content-type': 'application/json' }).end('{}'), 1000);
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const tally = emptyTally();
      const seq = { n: 5 };
      // A count, not a wall-clock window: the thread's start (tsx registration) takes what it takes.
      const opts = { chars: 2000, concurrency: 2, seq, calls: 5 };
      await bigPromptsOffThread({ url, model: 'm' }, 'sk-a', 0, tally, opts);
      expect(seen.length).toBe(5);
      expect(seen.every((s) => s.auth === 'Bearer sk-a' && s.content.length === 2000)).toBe(true);
      expect(new Set(seen.map((s) => s.content)).size).toBe(seen.length);
      expect(tally.statuses).toEqual({ 400: 1, ...(seen.length > 1 ? { 200: seen.length - 1 } : {}) });
      expect(tally.ms.length).toBe(seen.length);
      expect(seq.n).toBe(5 + seen.length); // the next window's prompts differ from these
      expect(seen[0].content).toBe(bigText(2000, seen[0].content.startsWith('# request 5\n') ? 5 : 6));
    } finally {
      server.close();
    }
  }, 60_000);

  it("A's prompt is a real prefill on the bench's workers: their max_model_len holds what the default refuses", async () => {
    expect(parseWorkerArgs(['--max-model-len', String(DEFAULTS.maxModelLen)]).opts.maxModelLen).toBe(
      DEFAULTS.maxModelLen,
    );
    const worker = await startSimWorker({ model: 'm', tokenizer: 'qwen3', maxModelLen: DEFAULTS.maxModelLen });
    try {
      const res = await fetch(`${worker.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          model: 'm',
          max_tokens: 8,
          messages: [{ role: 'user', content: bigText(DEFAULTS.chars, 1) }],
        }),
      });
      expect(res.status).toBe(200);
      const usage = ((await res.json()) as { usage: { prompt_tokens: number } }).usage;
      // More than the reference worker's default window (which answers vLLM's 400, see engine-shapes).
      expect(usage.prompt_tokens).toBeGreaterThan(DEFAULT_OPTIONS.maxModelLen);
      expect(usage.prompt_tokens + 8).toBeLessThanOrEqual(DEFAULTS.maxModelLen);
    } finally {
      await worker.close();
    }
  }, 120_000);
});
