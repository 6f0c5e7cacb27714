// bench chaos's fault schedule: the default is the schedule every earlier run printed (so runs
// before and after --faults compare), and --faults keeps a subset at the same times, so a run per
// kind bisects the full one; an unknown kind is refused. And --dispatch / --release-ms-per-token
// reach the gateway's config as the loader reads it (the gate as deployed when not given).
import { expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { parseConfig } from '../../gateway/config/load.ts';
import { ADMISSION_DEFAULTS } from '../../kvplanner/admission/admission-defaults.ts';
import {
  FAULT_KINDS,
  faultSchedule,
  faultsOf,
  gatewayConfig,
  gatewayEnvOf,
  parseChaosArgs,
} from '../../loadtest/bench-chaos.ts';

const printed = (steps: { atMs: number; what: string }[]): string[] =>
  [...steps].sort((a, b) => a.atMs - b.atMs).map((s) => `${(s.atMs / 1000).toFixed(1)}s ${s.what}`);

// `bench chaos --duration-s 60 --redis` as run at session 33's start (4 workers, every 10 s)
const FULL = [
  '3.0s kill -9 w0',
  '5.0s restart w0',
  '6.0s hang on w1',
  '9.0s hang off w1',
  '13.0s kill -9 w1',
  '15.0s restart w1',
  '16.0s die-mid-stream on w2',
  '19.0s die-mid-stream off w2',
  '23.0s kill -9 w2',
  '24.0s kill -9 redis',
  '25.0s restart w2',
  '26.0s 5xx-burst on w3',
  '29.0s 5xx-burst off w3',
  '33.0s kill -9 w3',
  '34.0s restart redis',
  '35.0s restart w3',
  '36.0s hang on w0',
  '39.0s hang off w0',
  '43.0s kill -9 w0',
  '45.0s restart w0',
  '46.0s die-mid-stream on w1',
  '49.0s die-mid-stream off w1',
  '53.0s kill -9 w1',
  '55.0s restart w1',
  '56.0s 5xx-burst on w2',
  '59.0s 5xx-burst off w2',
];

it('keeps the schedule earlier runs printed by default', () => {
  expect(printed(faultSchedule(60, 10, 4, faultsOf(undefined), true))).toEqual(FULL);
  expect(printed(faultSchedule(60, 10, 4, undefined, false))).toEqual(FULL.filter((l) => !l.includes('redis')));
});

it('keeps only the kinds asked for, at the same times', () => {
  for (const k of FAULT_KINDS) {
    const only = printed(faultSchedule(60, 10, 4, faultsOf(k), true));
    expect(only.length).toBeGreaterThan(0);
    for (const l of only) expect(FULL).toContain(l);
    const word = k === 'kill' ? /kill -9 w|restart w/ : k === 'redis' ? /redis/ : new RegExp(k);
    expect(only).toEqual(FULL.filter((l) => word.test(l)));
  }
  const two = printed(faultSchedule(60, 10, 4, faultsOf('hang,5xx-burst'), true));
  expect(two).toEqual(FULL.filter((l) => /hang|5xx/.test(l)));
  // the steps act on the workers the labels name
  const hang = faultSchedule(60, 10, 4, faultsOf('hang'))[0];
  expect(hang.op).toEqual({ kind: 'fault', worker: 1, fault: { hangMs: 8_000 } });
});

it('refuses a kind it does not know', () => {
  expect(() => faultsOf('kill,flood')).toThrow(/flood is not one of/);
});

it('sets the dispatch and the release order as asked, and leaves the defaults otherwise', () => {
  const model = (d?: Parameters<typeof gatewayConfig>[5]) =>
    parseConfig(parseYaml(gatewayConfig(['http://127.0.0.1:1'], '/tmp/x', undefined, 'ctxgate', 50, d)), 'chaos')
      .models[0];
  const deployed = model();
  expect(deployed.dispatch).toBe('admission');
  expect(deployed.admission.release_ms_per_token).toBe(ADMISSION_DEFAULTS.release_ms_per_token);
  expect(model({ dispatch: 'arrival' }).dispatch).toBe('arrival');
  const arrivalGate = model({ releaseMsPerToken: 0 });
  expect(arrivalGate.dispatch).toBe('admission');
  expect(arrivalGate.admission.release_ms_per_token).toBe(0);
});

it('reads --release-ms-per-token 0 (the gate in arrival order) and --dispatch from the command line', () => {
  expect(parseChaosArgs(['--release-ms-per-token', '0']).releaseMsPerToken).toBe(0);
  expect(parseChaosArgs([]).releaseMsPerToken).toBeUndefined();
  expect(parseChaosArgs(['--dispatch', 'arrival', '--faults', 'kill']).dispatch).toBe('arrival');
  expect(() => parseChaosArgs(['--release-ms-per-token', '-1'])).toThrow(/release-ms-per-token/);
  expect(() => parseChaosArgs(['--dispatch', 'fifo'])).toThrow(/--dispatch/);
});

it('reads --rounds (1 by default, at least 1)', () => {
  expect(parseChaosArgs([]).rounds).toBe(1);
  expect(parseChaosArgs(['--rounds', '3']).rounds).toBe(3);
  expect(() => parseChaosArgs(['--rounds', '0'])).toThrow(/--rounds/);
});

it('reads --gateway-env as NAME=VALUE pairs for the gateway alone, and refuses anything else', () => {
  expect(parseChaosArgs([]).gatewayEnv).toEqual({});
  expect(
    parseChaosArgs(['--gateway-env', 'LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2,MALLOC_ARENA_MAX=2'])
      .gatewayEnv,
  ).toEqual({ LD_PRELOAD: '/usr/lib/x86_64-linux-gnu/libjemalloc.so.2', MALLOC_ARENA_MAX: '2' });
  expect(gatewayEnvOf('GLIBC_TUNABLES=glibc.malloc.trim_threshold=131072')).toEqual({
    GLIBC_TUNABLES: 'glibc.malloc.trim_threshold=131072',
  });
  // a comma not followed by NAME= is the value's own (jemalloc's options)
  expect(gatewayEnvOf('MALLOC_CONF=background_thread:true,narenas:2, LD_PRELOAD=/x.so')).toEqual({
    MALLOC_CONF: 'background_thread:true,narenas:2',
    LD_PRELOAD: '/x.so',
  });
  for (const bad of ['MALLOC_ARENA_MAX', '=2', '1X=2', 'A B=1'])
    expect(() => gatewayEnvOf(bad)).toThrow(/--gateway-env/);
});
