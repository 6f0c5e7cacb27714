// The shared command line of bench chaos and bench hostile: numbers checked under the option's
// name (positive, or at least a minimum), counts rounded, unknown options refused, and a bad
// command line answered with exit 2 and the usage before anything starts.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { run as chaos } from '../../loadtest/bench-chaos.ts';
import { run as hostile } from '../../loadtest/bench-hostile.ts';
import { parseOrUsage, readOptions } from '../../loadtest/chaos/bench-cli.ts';

afterEach(() => {
  vi.restoreAllMocks();
});

describe('readOptions', () => {
  it('reads numbers, counts, strings and flags with their defaults', () => {
    const a = readOptions(['--n', '2.5', '--k', '3.4', '--s', 'x', '--f'], ['n', 'k', 's', 'z'], ['f', 'g']);
    expect(a.num('n', 1)).toBe(2.5);
    expect(a.int('k', 1)).toBe(3);
    expect(a.num('z', 7)).toBe(7);
    expect(a.str('s')).toBe('x');
    expect(a.str('z')).toBeUndefined();
    expect([a.bool('f'), a.bool('g')]).toEqual([true, false]);
  });

  it('names the option whose number is out of range', () => {
    const a = readOptions(['--n', '0', '--m=-1', '--x', 'abc'], ['n', 'm', 'x'], []);
    expect(() => a.num('n', 1)).toThrow('--n must be a positive number');
    expect(a.num('n', 1, 0)).toBe(0);
    expect(() => a.int('m', 1, 0)).toThrow('--m must be a number ≥ 0');
    expect(() => a.num('x', 1, 0)).toThrow('--x must be a number ≥ 0');
  });

  it('refuses an unknown option', () => {
    expect(() => readOptions(['--nope', '1'], ['n'], [])).toThrow(/nope/);
  });
});

describe('a bad command line', () => {
  it('is exit 2 with the error and the usage on stderr, before any process starts', async () => {
    const err: string[] = [];
    vi.spyOn(process.stderr, 'write').mockImplementation((s) => {
      err.push(String(s));
      return true;
    });
    expect(parseOrUsage('bench x', 'usage: x', [], () => ({ json: false }))).toEqual({ json: false });
    expect(await chaos(['--duration-s', '0'])).toBe(2);
    expect(await hostile(['--attacks', 'nope'])).toBe(2);
    expect(await hostile(['--workers-nice=-3'])).toBe(2);
    expect(err.join('')).toMatch(/^bench chaos: --duration-s must be a positive number\n\nctxgate bench chaos /);
    expect(err.join('')).toContain("bench hostile: --attacks: unknown attack 'nope'\n\nctxgate bench hostile ");
    expect(err.join('')).toContain('bench hostile: --workers-nice must be a number ≥ 0');
  });
});
