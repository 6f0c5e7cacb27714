// Codex against a reasoning model: Codex asks for `reasoning.encrypted_content`, keeps no state on
// the server (store: false) and sends each earlier reasoning item back. Through ctxgate every
// reasoning item Codex got carries the gateway's blob, Codex sends it back, and every later call's
// canonical body (the capture) carries the reasoning the worker gave as the assistant turn's
// reasoning_content. (Codex 0.171 resends the reasoning_text too; the blob-only path is covered
// with the openai SDK in test/gateway/responses-reasoning.test.ts.)
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, inject, it } from 'vitest';
import { AGENT_DEFS } from './agents.ts';
import { capturedFiles, logTail, startAgentRig } from './rig.ts';
import { makeWorkspace, runAgent, tail } from './run-agent.ts';

const RUN_TIMEOUT_MS = 150_000;
const PROMPT = 'Why does test_calc.py fail? Read the code, find the bug and explain it briefly.';

interface Captured {
  messages: { role: string; reasoning_content?: string }[];
  _meta: { time: string; client?: { api: string; body: { input?: unknown } } };
}

it('codex: reasoning items come back through the encrypted_content the gateway sealed', async () => {
  const def = AGENT_DEFS.find((d) => d.pkg.id === 'codex')!;
  const installed = inject('agentBins')[def.pkg.id];
  expect(installed?.error, `installing ${def.pkg.pkg}`).toBeUndefined();
  const dir = mkdtempSync(join(tmpdir(), 'ctxgate-agent-codex-reasoning-'));
  const ws = makeWorkspace(dir);
  const rig = await startAgentRig({
    dir,
    workspaceRoots: [ws.work],
    toolCallRate: 1,
    maxToolTurns: 2,
    reasoning: true,
  });
  let ok = false;
  try {
    const spec = def.prepare(rig, ws.home, ws.work, PROMPT);
    const r = await runAgent(installed.bin!, spec.args, spec.env, ws.work, RUN_TIMEOUT_MS);
    await rig.settle();
    const why = `exit ${r.code}; run folder kept: ${dir}\n${tail(r.stderr, 30)}\n${logTail(rig, 30)}`;
    expect(r.code, why).toBe(0);
    expect(
      rig.usage.filter((u) => u.status >= 400),
      why,
    ).toEqual([]);
    const calls = capturedFiles(rig)
      .flatMap((f) => readFileSync(f, 'utf8').trim().split('\n'))
      .map((l) => JSON.parse(l) as Captured)
      .filter((c) => c._meta.client?.api === 'openai-responses')
      .sort((a, b) => a._meta.time.localeCompare(b._meta.time));
    // the calls of the agent loop after the first: the client sent reasoning items back
    const later = calls.filter((c) => JSON.stringify(c._meta.client!.body.input).includes('"type":"reasoning"'));
    expect(later.length, why).toBeGreaterThanOrEqual(1);
    for (const c of later) {
      const items = (c._meta.client!.body.input as { type?: string; encrypted_content?: string }[]).filter(
        (i) => i.type === 'reasoning',
      );
      // what Codex sent back: the gateway's blob
      expect(
        items.every((i) => i.encrypted_content?.startsWith('ctxg1_')),
        why,
      ).toBe(true);
      // what the engine got: the text again
      const restored = c.messages.filter((m) => m.role === 'assistant' && m.reasoning_content);
      expect(restored.length, why).toBeGreaterThanOrEqual(items.length);
      for (const m of restored) expect(m.reasoning_content, why).toMatch(/^The user asks/);
    }
    ok = true;
  } finally {
    await rig.close();
    if (ok) rmSync(dir, { recursive: true, force: true });
  }
});
