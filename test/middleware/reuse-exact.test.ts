// The pipeline's cross-call reuse (resent messages interned to the previous call's objects, per
// object memos of escaping and hashes, the session store's parts shared between calls) must change
// nothing: long generated sessions go through one pipeline with reuse and one without, and every
// output body, receipt, prediction, token id, block hash and session id must be the same, as must
// the state each leaves in its store. The sessions exercise every stage that keeps state: a clock
// line (volatile), argument key orders that vary (canonical_tools), marker look-alikes in resent
// text (escaping), elided old outputs (stabilise), reads then writes (ledger tombstones), an edit,
// a rewound history and a derived session id forked by a second run of the same task.
import { describe, expect, it } from 'vitest';
import { hashKeys } from '../../kvplanner/hash-keys.ts';
import { createPipeline } from '../../middleware/pipeline.ts';
import { MemorySessionStore } from '../../middleware/session/memory-store.ts';
import type { SessionState, SessionStore } from '../../middleware/session/store.ts';
import type { ChatMessage, ChatRequest, PipelineContext, ToolDef } from '../../middleware/types.ts';
import { elideLastN, randomSession, requestsOf } from './helpers/session-gen.ts';

const MODEL = 'm';
const tool = (name: string, keys: string[], rev = 0): ToolDef => ({
  type: 'function',
  function: {
    name,
    description: `${name} [ctxgate] tool\nindex revision ${rev} of the workspace`,
    parameters: { type: 'object', properties: Object.fromEntries(keys.map((k) => [k, { type: 'string' }])) },
  },
});

/** Call k of a run: the history so far, rewritten the ways agents rewrite it. */
function request(history: ChatMessage[], k: number, run: number): ChatRequest {
  let messages = history.map((m, i) => {
    // A marker look-alike in resent text, escaped on every call it is resent.
    if (m.role === 'tool' && i % 5 === 0) return { ...m, content: `${m.content}\n［ｃｔｘｇａｔｅ］ note ${i}` };
    // The same arguments with their keys in another order: some turns always, every turn every sixth call.
    if (m.role === 'assistant' && m.tool_calls && (k % 6 === 5 || i % 8 === 2)) {
      const args = JSON.parse(m.tool_calls[0].function.arguments) as Record<string, unknown>;
      const flipped = JSON.stringify({ timeout: 30, ...args });
      return { ...m, tool_calls: [{ ...m.tool_calls[0], function: { name: 'bash', arguments: flipped } }] };
    }
    if (m.role === 'assistant' && m.tool_calls) {
      const args = JSON.parse(m.tool_calls[0].function.arguments) as Record<string, unknown>;
      const plain = JSON.stringify({ ...args, timeout: 30 });
      return { ...m, tool_calls: [{ ...m.tool_calls[0], function: { name: 'bash', arguments: plain } }] };
    }
    return m;
  });
  if (k > 12) messages = elideLastN(messages, 6);
  if (k === 20) messages[5] = { ...messages[5], content: 'edited by the agent' };
  if (k === 31) messages = messages.slice(0, 30);
  messages[0] = {
    role: 'system',
    content: `${messages[0].content}\nCurrent time: 2026-11-30T10:${String(Math.floor(k / 3) % 60).padStart(2, '0')}:00Z\nrun [ctxgate] ${run}`,
  };
  // The same tools in another order every third call; a revision in a description that changes
  // every fourth (volatile tools). The clock above changes every third call, so some calls resend
  // the root and tools of the call before (the stages' memos hit) and some do not.
  const tools = [tool('bash', ['command'], Math.floor(k / 4)), tool('edit', ['path', 'text'])];
  if (k % 3 === 2) tools.reverse();
  return { model: MODEL, messages, tools, max_tokens: 16 };
}

/** A store that serialises on every put and get, as every store did before parts were shared. */
class JsonStore implements SessionStore {
  private readonly m = new Map<string, string>();
  async get(tenant: string, id: string) {
    const s = this.m.get(`${tenant}\u0000${id}`);
    return s === undefined ? undefined : (JSON.parse(s) as SessionState);
  }
  async put(st: SessionState) {
    this.m.set(`${st.tenant}\u0000${st.sessionId}`, JSON.stringify({ ...st, checksum: undefined }));
  }
  async delete(tenant: string, id: string) {
    this.m.delete(`${tenant}\u0000${id}`);
  }
  async list() {
    return [...this.m.keys()].map((k) => k.split('\u0000')[1]);
  }
  async close() {}
}

/** A state without its wall-clock fields (the two pipelines run at different instants). */
function timeless(st: SessionState | undefined): unknown {
  return JSON.parse(
    JSON.stringify(st ?? null, (k, v) => (k === 'updatedAt' || k === 'at' || k === 'checksum' ? undefined : v)),
  );
}

describe('cross-call reuse is exact', () => {
  it('two runs of 40+ calls each, with and without reuse: the same bodies, receipts, predictions, ids and states', async () => {
    const fast = new MemorySessionStore();
    const slow = new JsonStore();
    const a = createPipeline({ model: MODEL, tokenizer: 'qwen3', store: fast });
    const b = createPipeline({ model: MODEL, tokenizer: 'qwen3', store: slow, reuse: false });
    // Run 0 sends a session header; runs 1 and 2 share a task and derive their ids (2 forks at its
    // first turn); their calls interleave, as parallel agents' do.
    const runs = [0, 1, 2].map((run) => requestsOf(randomSession(100 + run, 44)));
    const sessions = new Set<string>();
    const actions = new Set<string>();
    let n = 0;
    for (let k = 0; k < 44; k++) {
      for (const run of [0, 1, 2]) {
        const history = runs[run][k];
        if (!history) continue;
        const json = JSON.stringify(request(history, k, run === 2 ? 1 : run));
        const ctx: PipelineContext = {
          tenant: 't',
          requestId: `r${n++}`,
          headers: run === 0 ? { 'x-session-id': 'run-0' } : {},
          model: MODEL,
        };
        const inA = JSON.parse(json) as ChatRequest;
        const inB = JSON.parse(json) as ChatRequest;
        const ra = await a.process(inA, ctx);
        const rb = await b.process(inB, ctx);
        const where = `run ${run} call ${k}`;
        expect(JSON.stringify(ra.body), where).toBe(JSON.stringify(rb.body));
        expect(ra.body === inA, where).toBe(rb.body === inB);
        expect(ra.receipts, where).toEqual(rb.receipts);
        expect(ra.prefix, where).toEqual(rb.prefix);
        expect(ra.promptTokenIds, where).toEqual(rb.promptTokenIds);
        expect(ra.blockHashes, where).toEqual(rb.blockHashes);
        // the routing keys are the hashes' (the previous call's copied for the shared blocks)
        expect(ra.blockKeys, where).toEqual(hashKeys(ra.blockHashes!));
        expect(rb.blockKeys, where).toEqual(ra.blockKeys);
        expect([ra.sessionId, ra.affinityKey], where).toEqual([rb.sessionId, rb.affinityKey]);
        sessions.add(ra.sessionId);
        for (const r of ra.receipts) actions.add(`${r.stage}:${r.action}`);
        // The input is the caller's: never changed in place.
        expect(JSON.stringify(inA), where).toBe(json);
      }
    }
    // The runs did what they were meant to: three sessions, and every stage with state acted.
    expect(sessions.size).toBe(3);
    for (const a of [
      'volatile:relocate',
      'volatile:placeholder',
      'canonical_tools:reorder',
      'stabilise:defer_elision',
      'stabilise:edit_passed',
      'stabilise:history_truncated',
      'ledger:tombstone',
      'ledger:reset',
      'leaf_note:append',
    ])
      expect(actions, a).toContain(a);
    for (const id of sessions) expect(timeless(await fast.get('t', id)), id).toEqual(timeless(await slow.get('t', id)));
  }, 240_000);
});
