// docs/routing.md's admission table states every default of ADMISSION_DEFAULTS, and the defaults
// keep the deadline at or above the release order's slack (a deadline under it spills the calls the
// order defers: the ×2 gain is lost, and the sweep in admission-defaults.ts says so).
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ADMISSION_DEFAULTS } from '../../kvplanner/admission/admission-defaults.ts';

const ROUTING = readFileSync(new URL('../../docs/routing.md', import.meta.url), 'utf8');

function documentedDefaults(): Map<string, number> {
  const start = ROUTING.indexOf('| setting (`models[].admission`)');
  expect(start).toBeGreaterThan(0);
  const rows = ROUTING.slice(start).split('\n\n')[0].split('\n').slice(2);
  const out = new Map<string, number>();
  for (const row of rows) {
    const cells = row.split('|').map((c) => c.trim());
    const name = /^`([a-z_]+)`$/.exec(cells[1])?.[1];
    if (name) out.set(name, Number(cells[2]));
  }
  return out;
}

describe('admission defaults', () => {
  it('docs/routing.md states each default as ADMISSION_DEFAULTS has it', () => {
    const documented = documentedDefaults();
    expect([...documented.keys()].sort()).toEqual(Object.keys(ADMISSION_DEFAULTS).sort());
    for (const [k, v] of Object.entries(ADMISSION_DEFAULTS)) expect([k, documented.get(k)]).toEqual([k, v]);
  });

  it('hold calls at least as long as the release order may defer them', () => {
    if (ADMISSION_DEFAULTS.release_ms_per_token > 0) {
      expect(ADMISSION_DEFAULTS.max_wait_ms).toBeGreaterThanOrEqual(ADMISSION_DEFAULTS.release_max_slack_ms);
    }
  });
});
