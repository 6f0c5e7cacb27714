// session_state.ledger_write_version through the assembled gateway (config → chain → ledger stage,
// config → invalidate route): with 1, every write of a session's ledger part, by a call and by the
// invalidate route, is the v1 shape a release that reads only v1 reads; with the default, v2.
// Reference workers, the official openai SDK as client, the gateway's own session store read back.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OPEN_PRINCIPAL } from '../../gateway/auth.ts';
import { startAssembledGateway } from '../../gateway/assemble.ts';
import { parseConfig } from '../../gateway/config/load.ts';
import { readLedger } from '../../middleware/ledger/slot.ts';
import { MemorySessionStore } from '../../middleware/session/memory-store.ts';
import { startSimWorker, type SimWorker } from '../../loadtest/sim-worker/index.ts';
import type { ChatMessage } from '../../middleware/types.ts';

let worker: SimWorker;
beforeAll(async () => {
  worker = await startSimWorker({ port: 0, model: 'm', tokenizer: 'qwen3', kvTokens: 200_000, timeScale: 0, seed: 1 });
});
afterAll(async () => worker?.close());

const history = (calls: number): ChatMessage[] => {
  const msgs: ChatMessage[] = [{ role: 'user', content: 'Fix src/app.py.' }];
  for (let i = 0; i < calls; i++) {
    const id = `call_${i}`;
    const command = i === 0 ? 'cat src/app.py' : i === 1 ? "sed -i 's/a/b/' src/app.py" : `echo ${i}`;
    msgs.push(
      {
        role: 'assistant',
        content: '',
        tool_calls: [{ id, type: 'function', function: { name: 'bash', arguments: JSON.stringify({ command }) } }],
      },
      { role: 'tool', tool_call_id: id, content: i === 0 ? 'def f(a):\n    return a\n' : `ok ${i}` },
    );
  }
  return msgs;
};
const tools = [
  {
    type: 'function' as const,
    function: { name: 'bash', parameters: { type: 'object', properties: { command: { type: 'string' } } } },
  },
];

describe('ledger_write_version through the assembled gateway', () => {
  for (const version of [1, 2] as const) {
    it(`writes ledger parts as v${version} from calls and from the invalidate route`, async () => {
      const store = new MemorySessionStore();
      const config = parseConfig(
        {
          listen: { host: '127.0.0.1', port: 0 },
          auth: { mode: 'none' },
          health: { interval_ms: 0 },
          render_pool: { threads: 0 },
          ...(version === 1 ? { session_state: { ledger_write_version: 1 } } : {}),
          models: [{ name: 'm', tokenizer: 'qwen3', layout: 'ctxgate', workers: [{ url: worker.url, id: 'w0' }] }],
        },
        'e2e',
      );
      const gw = await startAssembledGateway(config, { logger: false, reporting: false, store });
      try {
        const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'none', maxRetries: 0, timeout: 20_000 });
        for (let call = 1; call <= 3; call++)
          await client.chat.completions.create(
            { model: 'm', messages: history(call) as never, tools, max_tokens: 8 },
            { headers: { 'x-session-id': 'sess' } },
          );
        const tenant = OPEN_PRINCIPAL.tenant;
        const afterCalls = (await store.get(tenant, 'sess'))!;
        expect(afterCalls.stages?.ledger.v).toBe(version);
        expect(readLedger(afterCalls)!.tombstones.length).toBeGreaterThan(0);
        const inval = await fetch(`${gw.url}/v1/gateway/sessions/sess/invalidate`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ uri: 'src/other.py' }),
        });
        expect(inval.status).toBe(202);
        const afterRoute = (await store.get(tenant, 'sess'))!;
        expect(afterRoute.stages?.ledger.v).toBe(version);
        expect(readLedger(afterRoute)!.pending.map((p) => p.uri)).toEqual(['file://src/other.py']);
      } finally {
        await gw.close();
      }
    });
  }
});
