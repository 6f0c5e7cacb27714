// The fake upstream's prefix cache holds no prompt alive: its piece memo keys are copies, not cuts
// of the prompt (V8 keeps a string that 13+ characters were cut from alive as long as the cut),
// and a session's memo holds only its last prompt. Before, every call with a new piece kept its
// whole prompt, and one `bench overhead` run grew the fake to 2.7 GB, its collections landing in
// the calls of whichever target ran then. Measured in a child process with --expose-gc (the heap
// after a full collection), over the bench's own growing sessions.
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));
const CALLS = 2500;
/** Before: ~100 MB held after 2,500 calls, ~30 KB more each call; now: the memos' bound (~30 MB here). */
const MAX_HELD_MB = 64;

const script = `
const { FakePrefixCache } = await import(${JSON.stringify(`${root}loadtest/fake-upstream-cache.ts`)});
const { GrowingTraffic } = await import(${JSON.stringify(`${root}loadtest/overhead/growing-sessions.ts`)});
const cache = await FakePrefixCache.load({ tokenizer: 'qwen3' });
const traffic = new GrowingTraffic({ slots: 34, model: 'm' });
const answer = { content: null, toolCalls: [{ id: 'call_1', type: 'function', function: { name: 'read_file', arguments: '{}' } }] };
cache.chat(JSON.parse(traffic.next()).messages, undefined, answer);
globalThis.gc();
const h0 = process.memoryUsage().heapUsed;
for (let i = 1; i < ${CALLS}; i++) {
  const b = JSON.parse(traffic.next());
  cache.chat(b.messages, b.tools, answer);
}
globalThis.gc();
process.stdout.write(String(process.memoryUsage().heapUsed - h0));
`;

describe('fake upstream cache memory', () => {
  it(`holds under ${MAX_HELD_MB} MB after ${CALLS} growing calls`, () => {
    const held = Number(
      execFileSync(process.execPath, ['--expose-gc', '--import', 'tsx', '--input-type=module', '-e', script], {
        cwd: root,
        encoding: 'utf8',
      }),
    );
    expect(held / 1e6).toBeLessThan(MAX_HELD_MB);
    expect(held).toBeGreaterThan(0);
  }, 120_000);
});
