import { describe, expect, it } from 'vitest';
import { createPipeline } from '../../middleware/pipeline.ts';
import { MemorySessionStore } from '../../middleware/session/memory-store.ts';
import { MemoryArtifactStore } from '../../middleware/artifacts/store.ts';
import { COMPACTION_SLOT } from '../../middleware/compaction/compact.ts';
import { readSlot } from '../../middleware/session/stage-state.ts';
import { buildSession, codeLines, elideLastN, requestsOf, type Step } from './helpers/session-gen.ts';

describe('stages in the real pipeline', () => {
  it('stabilise → ledger → compaction: no prefix break between compactions under last-n elision', async () => {
    const store = new MemorySessionStore();
    const artifacts = new MemoryArtifactStore();
    const p = createPipeline({
      model: 'm',
      tokenizer: 'cl100k_base',
      store,
      budgetTokens: 2500,
      artifacts,
    });
    const steps: Step[] = Array.from({ length: 24 }, (_, k) =>
      k % 6 === 3
        ? { cmd: `sed -i 's/a/b/' src/m${k - 1}.py`, out: '' }
        : { cmd: `sed -n '1,40p' src/m${k}.py`, out: codeLines(`m${k}`, 40) },
    );
    const reqs = requestsOf(buildSession('Fix the bug. Do not modify tests.', steps)).map((r) => elideLastN(r, 3));
    const actions: string[][] = [];
    const causes: string[] = [];
    for (const [k, messages] of reqs.entries()) {
      const r = await p.process(
        { model: 'm', messages },
        { tenant: 'T', requestId: `r${k}`, headers: { 'x-session-id': 's' }, model: 'm' },
      );
      actions.push(r.receipts.map((x) => `${x.stage}:${x.action}`));
      causes.push(r.prefix?.break_cause ?? '?');
    }
    const flat = actions.flat();
    expect(flat).toContain('stabilise:defer_elision');
    expect(flat).toContain('ledger:tombstone');
    expect(flat).toContain('compaction:compacted');
    for (let k = 1; k < reqs.length; k++) {
      if (actions[k].some((a) => a === 'compaction:compacted' || a === 'compaction:reset')) continue;
      expect(causes[k], `call ${k}: ${actions[k].join(',')}`).toBe('none');
    }
    const st = await store.get('T', 's');
    const compaction = readSlot(st!, COMPACTION_SLOT);
    expect(compaction?.n).toBeGreaterThan(0);
    expect(Object.keys(compaction!.checkpoint!.artifacts).length).toBeGreaterThan(0);
    const h = Object.values(compaction!.checkpoint!.artifacts)[0];
    expect(await artifacts.get('T', h)).toContain('<returncode>');
  });
});
