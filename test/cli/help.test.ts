// What a newcomer reads first: `ctxgate --help` lists every command and every benchmark there is,
// and each one's own --help loads and answers (a broken lazy import or a stale list shows here);
// a mistyped option makes each one exit 2 with a line naming it, before it starts anything.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { main } from '../../cli/main.ts';

afterEach(() => {
  vi.restoreAllMocks();
});

/** Runs `ctxgate ARGV` in this process; its exit code and what it wrote to stdout and stderr. */
async function ctxgate(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const write = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    out += String(chunk);
    return true;
  });
  const writeErr = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
    err += String(chunk);
    return true;
  });
  try {
    return { code: await main(argv), out, err };
  } finally {
    write.mockRestore();
    writeErr.mockRestore();
  }
}

/** Every command, and every benchmark as `bench NAME`, from the --help lists. */
async function everyCommand(): Promise<string[][]> {
  const names = [...(await ctxgate('--help')).out.matchAll(/^ {2}([a-z-]+) {2,}\S/gm)].map((m) => m[1]);
  const benches = /^ctxgate bench <([a-z|]+)>/.exec((await ctxgate('bench', '--help')).out)?.[1].split('|') ?? [];
  return [...names.filter((n) => n !== 'bench').map((n) => [n]), ...benches.map((b) => ['bench', b])];
}

describe('ctxgate --help', () => {
  it("lists the commands, and each command's --help answers with its own usage", async () => {
    const { code, out } = await ctxgate('--help');
    expect(code).toBe(0);
    const names = [...out.matchAll(/^ {2}([a-z-]+) {2,}\S/gm)].map((m) => m[1]);
    expect(names).toEqual(expect.arrayContaining(['up', 'serve', 'demo', 'bench', 'report']));
    for (const name of names) {
      const own = await ctxgate(name, '--help');
      expect(own.code, name).toBe(0);
      expect(own.out, name).toMatch(new RegExp(`^(usage: )?ctxgate ${name}\\b`));
    }
  });

  it("names every benchmark `ctxgate bench` runs, and each one's --help answers", async () => {
    const bench = await ctxgate('bench', '--help');
    const names = /^ctxgate bench <([a-z|]+)>/.exec(bench.out)?.[1].split('|') ?? [];
    expect(names).toEqual(expect.arrayContaining(['overhead', 'replay', 'routing', 'fleet', 'hostile']));
    const summary = (await ctxgate('--help')).out.split('\n').find((l) => l.startsWith('  bench '));
    for (const name of names) {
      expect(summary, name).toMatch(new RegExp(`\\b${name}\\b`));
      const own = await ctxgate('bench', name, '--help');
      expect(own.code, name).toBe(0);
      expect(own.out, name).toMatch(new RegExp(`^(usage: )?ctxgate bench ${name}\\b`));
    }
  });

  it('every command and benchmark refuses a mistyped option: exit 2, one line naming it first, no stack', async () => {
    const all = await everyCommand();
    expect(all.length).toBeGreaterThanOrEqual(19);
    for (const cmd of all) {
      // last on the line (no value after it) and with a value after it
      for (const argv of [
        [...cmd, '--wrokers'],
        [...cmd, '--wrokers', '2'],
      ]) {
        const { code, out, err } = await ctxgate(...argv);
        expect(code, argv.join(' ')).toBe(2);
        expect(out, argv.join(' ')).toBe('');
        expect(err.split('\n')[0], argv.join(' ')).toMatch(/^(ctxgate |bench |sim-worker).*--wrokers/);
        expect(err, argv.join(' ')).not.toMatch(/^\s+at /m);
      }
    }
  });
});
