// Answer ids come from a pooled CSPRNG buffer: each id is fresh lowercase hex of the asked length,
// and no bytes are handed out twice, across pool refills too.
import { describe, expect, it } from 'vitest';
import { messageId } from '../../gateway/ingress/anthropic-answer.ts';
import { ID_POOL_BYTES, randomHex } from '../../gateway/ingress/random-ids.ts';
import { newId } from '../../gateway/ingress/responses-answer.ts';

describe('random ids', () => {
  it('are hex of the asked length and distinct across pool refills', () => {
    const n = (4 * ID_POOL_BYTES) / 12 + 7;
    const ids = Array.from({ length: n }, () => randomHex(12));
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{24}$/);
    expect(new Set(ids).size).toBe(n);
    expect(randomHex(ID_POOL_BYTES)).toMatch(new RegExp(`^[0-9a-f]{${2 * ID_POOL_BYTES}}$`));
    expect(() => randomHex(ID_POOL_BYTES + 1)).toThrow(RangeError);
    expect(messageId()).toMatch(/^msg_[0-9a-f]{24}$/);
    expect(newId('resp')).toMatch(/^resp_[0-9a-f]{24}$/);
  });
});
