import { describe, expect, it } from 'vitest';
import { StrategyEvaluator } from '../../loadtest/strategies/evaluate.ts';
import { TokenModel } from '../../loadtest/strategies/token-model.ts';
import type { Strategy } from '../../loadtest/strategies/types.ts';
import type { Session } from '../../loadtest/formats/types.ts';
import type { ChatMessage } from '../../middleware/types.ts';

const charEncoder = { encode: (t: string) => [...t].map((c) => c.charCodeAt(0)) };
const pricing = { input_per_mtok: 1, cached_input_per_mtok: 0.1, output_per_mtok: 4 };

const out =
  'Traceback (most recent call last):\n  File "/app/svc/auth.py", line 142, in validate_claims\nTypeError: bad operand';
const raw: ChatMessage[] = [
  { role: 'system', content: 'You are an agent.' },
  { role: 'user', content: 'Fix the bug. Do not modify tests.' },
  {
    role: 'assistant',
    content: '',
    tool_calls: [{ id: 'a', type: 'function', function: { name: 'bash', arguments: '{"command":"pytest"}' } }],
  },
  { role: 'tool', tool_call_id: 'a', content: out },
];
const session: Session = {
  id: 's',
  source: 'test',
  calls: [{ body: { model: 'm', messages: raw.slice(0, 2) } }, { body: { model: 'm', messages: raw } }],
};

/** A strategy that replaces the observation by a digest whose only trace is a kept list. */
function replaced(list: string): Strategy {
  return {
    name: 'digest',
    describe: 'test',
    start: () => ({
      stage: (msgs) => {
        const messages = msgs.map((m) =>
          m.role === 'tool' ? { ...m, content: `#1 $ pytest → exit 1\n  kept: ${list}` } : m,
        );
        return { messages, origin: msgs.map((_, i) => i), hidden: new Set<number>() };
      },
    }),
  };
}

describe('strategy verbatim retention', () => {
  it('counts an item kept in a gateway-written identifier list as present (same rule as compaction)', async () => {
    const ev = new StrategyEvaluator(new TokenModel(charEncoder, 4), 10_000, pricing);
    const full = await ev.evaluate(replaced('/app/svc/auth.py | line 142 | validate_claims | TypeError'), [session]);
    expect(full.verbatim_retention).toBe(1);
    const partial = await ev.evaluate(replaced('/app/svc/auth.py | line 14'), [session]);
    // 'line 14' does not keep 'line 142'; only the path of four items remains
    expect(partial.verbatim_retention).toBeCloseTo((1 + 0.25) / 2, 4);
  });
});

describe('strategy cache model', () => {
  it('can count the previous completion as cached (engines keep decoded blocks)', async () => {
    const { fullLog } = await import('../../loadtest/strategies/baselines.ts');
    const three: Session = {
      ...session,
      calls: [
        ...session.calls,
        {
          body: {
            model: 'm',
            messages: [
              ...raw,
              { role: 'assistant', content: 'done, see /app/svc/auth.py' },
              { role: 'user', content: 'ok' },
            ],
          },
        },
      ],
    };
    const plain = await new StrategyEvaluator(new TokenModel(charEncoder, 4), 10_000, pricing).evaluate(fullLog, [
      three,
    ]);
    const withOut = await new StrategyEvaluator(new TokenModel(charEncoder, 4), 10_000, pricing, {
      cacheCompletions: true,
    }).evaluate(fullLog, [three]);
    expect(withOut.cached_tokens).toBeGreaterThan(plain.cached_tokens);
    // the full log only ever extends itself: every call after the first is between compactions
    expect(plain.compactions).toBe(0);
    expect(plain.hit_rate_between_compactions).toBeGreaterThan(plain.hit_rate);
  });
});
