// `ctxgate explain` on input a newcomer gets wrong (no file, a missing one, a bad flag value, an
// unknown tokenizer or template) answers with one line naming the problem and exit code 2, never
// a stack trace.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { run } from '../../cli/commands/explain.ts';

const FIXTURE = new URL('../fixtures/trajectories/aider/', import.meta.url).pathname;

afterEach(() => {
  vi.restoreAllMocks();
});

async function explain(...argv: string[]): Promise<{ code: number; err: string }> {
  let err = '';
  vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
    err += String(chunk);
    return true;
  });
  const out = vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
  const code = await run(argv);
  expect(out).not.toHaveBeenCalled();
  return { code, err };
}

describe('ctxgate explain on bad input', () => {
  it.each([
    [[], /^ctxgate explain: give at least one FILE or DIR\n/],
    [['/nonexistent/session.jsonl'], /^ctxgate explain: ENOENT: .*'\/nonexistent\/session\.jsonl'\n$/],
    [[FIXTURE, '--layout', 'weird'], /^ctxgate explain: --layout must be one of passthrough, ctxgate, got 'weird'\n$/],
    [[FIXTURE, '--block-size', 'abc'], /^ctxgate explain: --block-size must be an integer >= 1, got 'abc'\n$/],
    [[FIXTURE, '--block-size', '0'], /^ctxgate explain: --block-size must be an integer >= 1, got '0'\n$/],
    [[FIXTURE, '--tokenizer', 'nope'], /^ctxgate explain: unknown tokenizer 'nope': expected one of qwen3, /],
    [[FIXTURE, '--chat-template', '/nonexistent.jinja'], /^ctxgate explain: ENOENT: .*'\/nonexistent\.jinja'\n$/],
  ])('%j: one line, exit 2', async (argv, message) => {
    const { code, err } = await explain(...argv);
    expect(code).toBe(2);
    expect(err).toMatch(message);
    expect(err).not.toContain('    at ');
  });
});
