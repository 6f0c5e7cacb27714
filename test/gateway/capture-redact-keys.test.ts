// Capture persists the client's own body (`_meta.client`) and the canonical body: a secret used as
// an object KEY (Anthropic `metadata`, schema property names, tool inputs) must be redacted like a
// value before it reaches disk. Over a real socket: assembled gateway, reference worker, capture on.
import { mkdtempSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAssembledGateway } from '../../gateway/assemble.ts';
import { parseConfig } from '../../gateway/config/load.ts';
import { startSimWorker, type SimWorker } from '../../loadtest/sim-worker/index.ts';
import { redactDeep } from '../../middleware/redaction/redact.ts';
import { until } from '../helpers/until.ts';

const M = 'qwen3-32b';
const SECRET = 'AKIAIOSFODNN7EXAMPL2';
const dir = mkdtempSync(join(tmpdir(), 'cap-keys-'));
let url = '';
let close: (() => Promise<void>) | undefined;

beforeAll(async () => {
  const worker: SimWorker = await startSimWorker({ port: 0, model: M, tokenizer: 'qwen3', timeScale: 0, seed: 3 });
  const config = parseConfig({
    listen: { host: '127.0.0.1', port: 0 },
    health: { interval_ms: 0 },
    models: [
      {
        name: M,
        tokenizer: 'qwen3',
        layout: 'ctxgate',
        capture: { enabled: true, sample_rate: 1, dir },
        workers: [{ url: worker.url, id: 'w0' }],
      },
    ],
  });
  const gw = await startAssembledGateway(config, { logger: false, reporting: false });
  url = gw.url;
  close = async () => {
    await gw.close();
    await worker.close();
  };
});
afterAll(async () => close?.());

const files = (d: string): string[] =>
  readdirSync(d).flatMap((f) => (statSync(join(d, f)).isDirectory() ? files(join(d, f)) : [join(d, f)]));

describe('capture redacts secrets in object keys', () => {
  it('redactDeep renames a secret key, suffixes a collision and keeps the values', () => {
    const red = '[REDACTED:aws_access_key]';
    const { value, findings } = redactDeep({ [SECRET]: 1, [red]: 2, nested: [{ [`x ${SECRET}`]: 'v' }] });
    expect(value).toEqual({ [red]: 1, [`${red}#2`]: 2, nested: [{ [`x ${red}`]: 'v' }] });
    expect(findings).toEqual([{ kind: 'aws_access_key', count: 2 }]);
    const clean = JSON.parse('{"a":{"b":1},"__proto__":{"c":2}}');
    expect(JSON.stringify(redactDeep(clean).value)).toBe(JSON.stringify(clean));
  });

  it('a secret used as a key in metadata or a schema never reaches the capture file', async () => {
    const body = {
      model: M,
      max_tokens: 8,
      metadata: { user_id: `u ${SECRET}`, [SECRET]: 1 },
      tools: [{ name: 'bash', input_schema: { type: 'object', properties: { [SECRET]: { type: 'string' } } } }],
      messages: [{ role: 'user', content: 'hi' }],
    };
    const res = await fetch(`${url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-session-id': 'cap1' },
      body: JSON.stringify(body),
    });
    expect(res.status).toBe(200);
    await res.text();
    let written: string[] = [];
    await until(() => {
      written = files(dir).filter((f) => readFileSync(f, 'utf8').length > 0);
      return written.length > 0;
    });
    expect(written.length).toBeGreaterThan(0);
    const all = written.map((f) => readFileSync(f, 'utf8')).join('\n');
    expect(all).toContain('[REDACTED:aws_access_key]');
    expect(all).not.toContain(SECRET);
  });
});
