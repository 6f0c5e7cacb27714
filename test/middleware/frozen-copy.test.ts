// Copies of deep-frozen state parts: the same elements, keys and key order as the frozen value
// (so the stored JSON is unchanged), mutable, and not sharing the container with it.
import { describe, expect, it } from 'vitest';
import { freezeDeep } from '../../middleware/deep-freeze.ts';
import { copyArray, copyRecord } from '../../middleware/frozen-copy.ts';

describe('frozen copies', () => {
  it('copies a frozen array into a mutable one with the same elements', () => {
    const a = freezeDeep(['x', { y: 1 }, null, 3]);
    const c = copyArray(a);
    expect(Object.isFrozen(a)).toBe(true);
    expect(Object.isFrozen(c)).toBe(false);
    expect(JSON.stringify(c)).toBe(JSON.stringify(a));
    expect(c[1]).toBe(a[1]); // elements shared, the container not
    c.push('z');
    c.length = 1;
    expect(a).toHaveLength(4);
  });

  it('copies a frozen record with integer and string keys in their JSON order', () => {
    const src = JSON.parse('{"b":1,"10":"ten","a":2,"2":"two","call_7":[7,0,"h"]}') as Record<string, unknown>;
    const r = freezeDeep(src);
    const c = copyRecord(r);
    expect(Object.isFrozen(c)).toBe(false);
    expect(JSON.stringify(c)).toBe(JSON.stringify(r));
    expect(Object.keys(c)).toEqual(Object.keys(r));
    c.z = 1;
    delete c['10'];
    expect(Object.keys(r)).toHaveLength(5);
  });
});
