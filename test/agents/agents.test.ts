// Real agents in the loop: each pinned agent CLI runs one task non-interactively, with its default
// settings, through ctxgate (`layout: ctxgate`, `policy: ctxgate`) in front of two reference
// workers that answer with tool calls on the agent's real files for a few turns, then with text.
// Per run: exit 0 within the time limit, several turns, no 4xx/5xx from the gateway, the lossless
// checker finds nothing on any call, one conversation per run, the gateway's predicted cached
// tokens agree with what the worker reports. A failure prints the agent's output, the calls the
// gateway saw and the tail of the gateway's log, and keeps the run's folder (captures, log).
// CTXGATE_AGENTS_RECORD=1 rewrites test/fixtures/agents/<agent>.jsonl from the run's capture.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, inject, it } from 'vitest';
import { AGENT_DEFS, type AgentDef } from './agents.ts';
import { capturedFiles, logTail, startAgentRig, type AgentRig } from './rig.ts';
import { makeWorkspace, runAgent, tail, type AgentResult } from './run-agent.ts';

/** Hard limit per agent run; a healthy run takes 5-30 s on 2 cores. */
const RUN_TIMEOUT_MS = 150_000;
/** Tool turns the reference workers answer before the closing text answer. */
const TOOL_TURNS = 3;
const BLOCK = 16;
const PROMPT = 'Why does test_calc.py fail? Read the code, find the bug and explain it briefly.';
const FIXTURES = join(dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'agents');

function describeRun(def: AgentDef, rig: AgentRig, r: AgentResult, dir: string): string {
  const calls = rig.usage.map(
    (u, i) =>
      `  #${i} ${u.api} ${u.status} session=${u.sessionId} prompt=${u.promptTokens} cached=${u.cachedTokens} predicted=${u.predictedCachedTokens ?? '-'} out=${u.outputTokens}${u.errorCode ? ` error=${u.errorCode}` : ''}`,
  );
  const lossless = rig.lossless.flatMap((l) =>
    l.report.details.map((d) => `  ${l.session} ${d.kind} @${d.message} ${d.role ?? ''}: ${d.line}`),
  );
  return [
    `${def.pkg.pkg}@${def.pkg.version}: exit ${r.code}${r.signal ? ` (${r.signal})` : ''}${r.timedOut ? ` TIMED OUT after ${RUN_TIMEOUT_MS / 1000} s` : ''} in ${r.seconds.toFixed(1)} s; run folder kept: ${dir}`,
    `calls the gateway saw (${rig.usage.length}):`,
    ...calls,
    ...(lossless.length ? ['lossless findings:', ...lossless] : []),
    '--- agent stdout (tail) ---',
    tail(r.stdout, 20),
    '--- agent stderr (tail) ---',
    tail(r.stderr, 30),
    '--- gateway log (tail) ---',
    logTail(rig, 30),
  ].join('\n');
}

/** The run's capture as one request stream (turns in time order, one session name). */
function recordFixture(def: AgentDef, rig: AgentRig): void {
  const lines = capturedFiles(rig)
    .flatMap((f) => readFileSync(f, 'utf8').trim().split('\n'))
    .map((l) => JSON.parse(l) as { _meta: { time: string; session: string; turn: number } })
    .sort((a, b) => a._meta.time.localeCompare(b._meta.time));
  lines.forEach((l, turn) => {
    l._meta.session = def.pkg.id;
    l._meta.turn = turn;
  });
  mkdirSync(FIXTURES, { recursive: true });
  writeFileSync(join(FIXTURES, `${def.pkg.id}.jsonl`), lines.map((l) => JSON.stringify(l)).join('\n') + '\n');
}

describe('real agents through ctxgate', () => {
  const bins = inject('agentBins');

  for (const def of AGENT_DEFS) {
    it(`${def.pkg.id} (${def.pkg.pkg}@${def.pkg.version}) runs a multi-turn task`, async () => {
      const installed = bins[def.pkg.id];
      expect(installed?.error, `installing ${def.pkg.pkg}@${def.pkg.version}`).toBeUndefined();
      const dir = mkdtempSync(join(tmpdir(), `ctxgate-agent-${def.pkg.id}-`));
      const ws = makeWorkspace(dir);
      const rig = await startAgentRig({ dir, workspaceRoots: [ws.work], toolCallRate: 1, maxToolTurns: TOOL_TURNS });
      let ok = false;
      try {
        const spec = def.prepare(rig, ws.home, ws.work, PROMPT);
        const r = await runAgent(installed.bin!, spec.args, spec.env, ws.work, RUN_TIMEOUT_MS);
        await rig.settle();
        const why = describeRun(def, rig, r, dir);
        console.log(`[agents] ${def.pkg.id}: exit ${r.code} in ${r.seconds.toFixed(1)} s, ${rig.usage.length} calls`);

        expect(r.timedOut, why).toBe(false);
        expect(r.code, why).toBe(0);
        // No 4xx/5xx, and every call came in over the agent's own API.
        expect(
          rig.usage.filter((u) => u.status >= 400),
          why,
        ).toEqual([]);
        expect(
          rig.usage.every((u) => u.api === def.api),
          why,
        ).toBe(true);
        // Several turns: the agent's loop (calls offering tools) ran every tool turn and the closing answer.
        const loop = rig.lossless.filter((l) => l.tools > 0);
        expect(loop.length, why).toBeGreaterThanOrEqual(TOOL_TURNS + 1);
        // Nothing the agent sent was lost or altered; first calls passed unchanged.
        for (const l of rig.lossless) {
          expect(
            { missing: l.report.missing, altered: l.report.altered, first_call_changed: l.report.first_call_changed },
            why,
          ).toEqual({ missing: 0, altered: 0, first_call_changed: 0 });
        }
        // One conversation per run: one session id from its first call to its last, derived
        // (no session header, e.g. Qwen Code) or the harness's own, and one routing key.
        expect(new Set(loop.map((l) => l.session)).size, why).toBe(1);
        expect(new Set(loop.map((l) => l.affinity)).size, why).toBe(1);
        // Predicted and reported cached tokens agree: never over-predicted by more than a block,
        // and short only by the blocks of the previous answer the engine also cached.
        let prevOut = 0;
        for (const u of rig.usage) {
          const p = u.predictedCachedTokens;
          expect(p, why).toBeTypeOf('number');
          expect(p! - u.cachedTokens, why).toBeLessThanOrEqual(BLOCK);
          expect(u.cachedTokens - p!, why).toBeLessThanOrEqual(prevOut + 2 * BLOCK);
          prevOut = u.outputTokens;
        }
        const sumP = rig.usage.reduce((a, u) => a + (u.predictedCachedTokens ?? 0), 0);
        const sumC = rig.usage.reduce((a, u) => a + u.cachedTokens, 0);
        expect(sumC, why).toBeGreaterThan(0);
        expect(Math.abs(sumP - sumC) / sumC, why).toBeLessThan(0.05);
        if (process.env.CTXGATE_AGENTS_RECORD === '1') recordFixture(def, rig);
        ok = true;
      } finally {
        await rig.close();
        if (ok) rmSync(dir, { recursive: true, force: true });
      }
    });
  }
});
