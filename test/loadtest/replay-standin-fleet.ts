// Test-only stand-in fleet for replay tests: N tiny workers with a char-block prefix cache and a
// round-robin pass-through front. Records every body a worker received.
import { createHash } from 'node:crypto';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FleetFactory, FleetSpec, WorkerReport } from '../../loadtest/replay/types.ts';

const CHARS_PER_TOKEN = 4;

function listen(s: Server): Promise<number> {
  return new Promise((r) => s.listen(0, '127.0.0.1', () => r((s.address() as AddressInfo).port)));
}

function readBody(req: import('node:http').IncomingMessage): Promise<string> {
  return new Promise((r) => {
    let b = '';
    req.on('data', (c) => (b += c));
    req.on('end', () => r(b));
  });
}

export interface StandinLog {
  specs: FleetSpec[];
  bodies: string[][];
}

export function standinFleet(log: StandinLog): FleetFactory {
  return async (spec) => {
    log.specs.push(spec);
    const received: string[] = [];
    log.bodies.push(received);
    const workers: { server: Server; port: number; report: WorkerReport; blocks: Set<string> }[] = [];
    for (let i = 0; i < spec.workers; i++) {
      const report: WorkerReport = { worker: `w${i}`, requests: 0, prompt_tokens: 0, cached_tokens: 0 };
      const blocks = new Set<string>();
      const server = createServer(async (req, res) => {
        const raw = await readBody(req);
        received.push(raw);
        const body = JSON.parse(raw) as { messages: unknown; tools?: unknown };
        const text = JSON.stringify([body.tools ?? null, body.messages]);
        const tokens = Math.ceil(text.length / CHARS_PER_TOKEN);
        const blockChars = spec.blockSize * CHARS_PER_TOKEN;
        let h = '';
        let cached = 0;
        let hit = true;
        for (let off = 0; off + blockChars <= text.length; off += blockChars) {
          h = createHash('sha1')
            .update(h + text.slice(off, off + blockChars))
            .digest('hex');
          if (hit && blocks.has(h)) cached += spec.blockSize;
          else hit = false;
          blocks.add(h);
        }
        report.requests++;
        report.prompt_tokens += tokens;
        report.cached_tokens += cached;
        res.setHeader('content-type', 'application/json');
        res.setHeader(
          'x-sim-timing',
          `queue_ms=0;prefill_ms=${(tokens - cached) / 10};decode_ms=5;ttft_ms=${(tokens - cached) / 10 + 1}`,
        );
        res.end(
          JSON.stringify({
            id: 'x',
            object: 'chat.completion',
            choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
            usage: { prompt_tokens: tokens, completion_tokens: 3, prompt_tokens_details: { cached_tokens: cached } },
          }),
        );
      });
      workers.push({ server, port: await listen(server), report, blocks });
    }
    let rr = 0;
    const front = createServer(async (req, res) => {
      const raw = await readBody(req);
      const w = workers[rr++ % workers.length];
      const up = httpRequest(
        {
          host: '127.0.0.1',
          port: w.port,
          path: req.url,
          method: 'POST',
          headers: { 'content-type': 'application/json' },
        },
        (ur) => {
          res.writeHead(ur.statusCode ?? 500, {
            'content-type': 'application/json',
            'x-sim-timing': String(ur.headers['x-sim-timing'] ?? ''),
            'x-ctxgate-worker': w.report.worker,
          });
          ur.pipe(res);
        },
      );
      up.end(raw);
    });
    const port = await listen(front);
    return {
      url: `http://127.0.0.1:${port}`,
      model: spec.model,
      perWorker: async () => workers.map((w) => ({ ...w.report })),
      close: async () => {
        await new Promise((r) => front.close(r));
        for (const w of workers) await new Promise((r) => w.server.close(r));
      },
    };
  };
}
