// The pipeline's kept last calls (`local`, middleware/tenant-lru.ts) are shared per tenant: a
// tenant sending many first calls evicts its own kept calls, so another tenant's next call still
// continues from its kept one (its resent messages interned, only the new tail tokenised) instead
// of the O(history) path. Lossless either way: the victim's upstream bodies and block hashes are
// the same with and without the flood, and the same when the victim's kept call is lost.
import { describe, expect, it } from 'vitest';
import { createPipeline } from '../../middleware/pipeline.ts';
import { MemorySessionStore } from '../../middleware/session/memory-store.ts';
import { TenantQuotaStore } from '../../middleware/session/tenant-quota-store.ts';
import type { ChatMessage, ChatRequest } from '../../middleware/types.ts';

const sys: ChatMessage = { role: 'system', content: 'You are a coding agent. Use the tools.' };
const tools: ChatRequest['tools'] = [
  {
    type: 'function',
    function: {
      name: 'bash',
      description: 'run',
      parameters: { type: 'object', properties: { cmd: { type: 'string' } } },
    },
  },
];

/** The victim's growing tool session: call i resends everything before it. */
function victimCall(i: number): ChatRequest {
  const messages: ChatMessage[] = [sys, { role: 'user', content: 'Fix the failing test in repo X.' }];
  for (let k = 0; k < i; k++) {
    messages.push({
      role: 'assistant',
      content: `step ${k}`,
      tool_calls: [{ id: `c${k}`, type: 'function', function: { name: 'bash', arguments: `{"cmd":"ls ${k}"}` } }],
    });
    messages.push({ role: 'tool', tool_call_id: `c${k}`, content: `output of call ${k}\n`.repeat(30) });
  }
  return { model: 'm', messages, tools };
}

const floodCall = (i: number): ChatRequest => ({
  model: 'm',
  messages: [sys, { role: 'user', content: `Unrelated task number ${i}.` }],
  tools,
});

async function run(flood: number, maxLocalCalls: number) {
  // as the gateway wires it (assemble.ts): a per-tenant quota over a memory store of quota × tenants
  const store = new TenantQuotaStore(new MemorySessionStore({ maxSessions: 80 }), { maxSessions: 40, maxTenants: 2 });
  const p = createPipeline({ model: 'm', tokenizer: 'qwen3', store, maxLocalCalls });
  const out: { body: string; hashes: string; interned: boolean }[] = [];
  let n = 0;
  for (let i = 0; i < 6; i++) {
    let interned = false;
    const r = await p.process(victimCall(i), {
      tenant: 'victim',
      requestId: `v${n++}`,
      headers: {},
      model: 'm',
      onInterned: (what) => {
        if (what === 'messages') interned = true;
      },
    });
    await r.stored;
    out.push({ body: JSON.stringify(r.body), hashes: (r.blockHashes ?? []).join(','), interned });
    if (i === 3)
      for (let k = 0; k < flood; k++) {
        const f = await p.process(floodCall(k), { tenant: 'flood', requestId: `f${n++}`, headers: {}, model: 'm' });
        await f.stored;
      }
  }
  return out;
}

describe("the pipeline's kept last calls, per tenant", () => {
  it("another tenant's flood of first calls leaves the victim's kept call; outputs unchanged", async () => {
    const quiet = await run(0, 8);
    const flooded = await run(30, 8);
    // room for one kept call in all: the victim's is lost to the flood, and nothing else changes
    const lost = await run(30, 1);
    // call 4 is the victim's first call after the flood: it still continues from its kept call
    expect(quiet.map((c) => c.interned)).toEqual([false, true, true, true, true, true]);
    expect(flooded.map((c) => c.interned)).toEqual(quiet.map((c) => c.interned));
    expect(lost[4].interned).toBe(false);
    for (const other of [flooded, lost])
      for (let i = 0; i < quiet.length; i++) {
        expect(other[i].body).toBe(quiet[i].body);
        expect(other[i].hashes).toBe(quiet[i].hashes);
      }
  });
});
