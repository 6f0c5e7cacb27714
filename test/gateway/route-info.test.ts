// The gateway's RouteInfo (gateway/proxy/route-info.ts): a class instance instead of an object
// literal with a getter (which V8 builds in dictionary mode). The policy must read the same
// values: the same own fields, `text` as the prompt's text, computed on first read only.
import { describe, expect, it } from 'vitest';
import { GatewayRouteInfo } from '../../gateway/proxy/route-info.ts';
import type { PipelineResult } from '../../middleware/types.ts';

const defer = (step: () => boolean): void => {
  while (!step());
};

function result(body: Record<string, unknown>, extra: Partial<PipelineResult> = {}): PipelineResult {
  return { body, sessionId: 's1', receipts: [], ...extra } as unknown as PipelineResult;
}

describe('GatewayRouteInfo', () => {
  it('carries the request fields the policies read, the affinity key before the session id', () => {
    const ids = new Uint32Array([5, 6, 7]);
    const keys = new Int32Array([0, -1, 0, -1]);
    const r = result(
      { model: 'm', messages: [] },
      { affinityKey: 'aff', promptTokenIds: ids, blockHashes: ['a', 'b'], blockKeys: keys },
    );
    const info = new GatewayRouteInfo('m', 't', 'salt', r, 3, defer);
    expect({ ...info }).toEqual({
      model: 'm',
      tenant: 't',
      cacheSalt: 'salt',
      sessionId: 'aff',
      promptTokenIds: ids,
      blockHashes: ['a', 'b'],
      blockKeys: keys,
      promptTokens: 3,
      defer,
    });
    expect(info.promptTokenIds).toBe(ids);
    expect(info.blockKeys).toBe(keys);
    expect(new GatewayRouteInfo('m', 't', 'salt', result({}), 1, undefined).sessionId).toBe('s1');
    const none = { body: {}, sessionId: '', receipts: [] } as unknown as PipelineResult;
    const anon = new GatewayRouteInfo('m', 't', 'salt', none, 1, undefined);
    expect(anon.sessionId).toBeUndefined();
    expect(Object.hasOwn(anon, 'sessionId')).toBe(true);
  });

  it("gives the prompt's text (string and part contents, in order), computed on first read only", () => {
    const messages = [
      { role: 'system', content: 'sys ' },
      { role: 'user', content: [{ type: 'text', text: 'a' }, { type: 'image_url' }, { type: 'text', text: 'b' }] },
      { role: 'assistant', content: null },
      { role: 'user', content: 'c' },
    ];
    const body = { model: 'm', messages };
    const info = new GatewayRouteInfo('m', 't', 'salt', result(body), 1, undefined);
    expect(info.text).toBe('sys abc');
    messages.push({ role: 'user', content: 'later' });
    expect(info.text).toBe('sys abc');
    expect(new GatewayRouteInfo('m', 't', 's', result({ prompt: 'p' }), 1, undefined).text).toBe('p');
    expect(new GatewayRouteInfo('m', 't', 's', result({ prompt: [1, 2] }), 1, undefined).text).toBe('[1,2]');
  });
});
