// Every 400 the request-shape check gives for tools and tool calls: the message and the field it
// names (param), as clients read them. The paths are written only when a check fails.
import { describe, expect, it } from 'vitest';
import { checkRequestShape } from '../../gateway/limits/request-shape.ts';
import { GatewayError } from '../../middleware/errors.ts';

const fn = (f: Record<string, unknown>) => ({ type: 'function', function: { name: 'f', ...f } });
const user = { role: 'user', content: 'hi' };
const withCall = (c: unknown) => ({
  messages: [
    user,
    {
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'a', type: 'function', function: { name: 'g', arguments: '{}' } }, c],
    },
  ],
});

function errorOf(body: Record<string, unknown>): { code: string; message: string; param: string | null } | undefined {
  try {
    checkRequestShape(body, 1_000_000);
    return undefined;
  } catch (e) {
    expect(e).toBeInstanceOf(GatewayError);
    const g = e as GatewayError;
    return { code: g.code, message: g.message, param: g.param };
  }
}

describe('request shape errors', () => {
  it.each([
    [{ messages: [user], tools: [fn({}), 5] }, 'invalid_request', 'tools[1] must be an object', 'tools[1]'],
    [
      { messages: [user], tools: [{ function: {} }] },
      'invalid_request',
      'tools[0].type must be a string',
      'tools[0].type',
    ],
    [
      { messages: [user], tools: [{ type: 'function', function: 'x' }] },
      'invalid_request',
      'tools[0].function must be an object',
      'tools[0].function',
    ],
    [
      { messages: [user], tools: [fn({ description: 3 })] },
      'invalid_request',
      'tools[0].function.description must be a string',
      'tools[0].function.description',
    ],
    [
      { messages: [user], tools: [fn({ parameters: [] })] },
      'invalid_request',
      'tools[0].function.parameters must be a JSON Schema object',
      'tools[0].function.parameters',
    ],
    [
      withCall({ id: 'b', function: 'x' }),
      'invalid_messages',
      'messages[1].tool_calls[1].function must be an object',
      'messages[1].tool_calls[1].function',
    ],
    [
      withCall({ id: 'b', function: { name: 1 } }),
      'invalid_messages',
      'messages[1].tool_calls[1].function.name must be a string',
      'messages[1].tool_calls[1].function.name',
    ],
    [
      withCall({ id: 'b', function: { name: 'f', arguments: {} } }),
      'invalid_messages',
      'messages[1].tool_calls[1].function.arguments must be a JSON string',
      'messages[1].tool_calls[1].function.arguments',
    ],
  ])('%j', (body, code, message, param) => {
    expect(errorOf(body)).toEqual({ code, message, param });
  });

  it('passes well-formed tools and calls, and other tool kinds', () => {
    expect(
      errorOf({
        ...withCall({ id: 'b', function: { name: 'f' } }),
        tools: [fn({ description: 'd', parameters: {} }), { type: 'web_search' }],
      }),
    ).toBeUndefined();
  });
});
