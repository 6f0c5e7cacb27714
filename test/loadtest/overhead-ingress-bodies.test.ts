// The overhead bench compares ingress APIs on the same sessions: its Anthropic and Responses
// bodies must reach the pipeline as exactly the chat body's conversation.
import { describe, expect, it } from 'vitest';
import { parseAnthropic } from '../../gateway/ingress/anthropic-request.ts';
import { parseResponses } from '../../gateway/ingress/responses-request.ts';
import { MemoryResponseStore } from '../../gateway/ingress/responses-store.ts';
import { sessionBodies } from '../../loadtest/overhead/growing-sessions.ts';
import { chatToAnthropic, chatToResponses } from '../../loadtest/overhead/ingress-bodies.ts';
import type { ChatRequest } from '../../middleware/types.ts';

describe('bench overhead: ingress bodies', () => {
  it('translate back to the chat body’s messages and tools, call after call', async () => {
    const ctx = { tenant: 't', maxMessages: 10_000 };
    const store = new MemoryResponseStore({ ttlSeconds: 1, maxEntryBytes: 1, maxBytes: 1 });
    for (const [h, t] of sessionBodies(1, { slots: 2, model: 'm', calls: 5 })) {
      const chat = `${h}1-0${t}`;
      const want = JSON.parse(chat) as ChatRequest;
      const a = parseAnthropic(JSON.parse(chatToAnthropic(chat)), ctx).body;
      const r = (await parseResponses(JSON.parse(chatToResponses(chat)), ctx, store, () => 'resp_1')).body;
      for (const got of [a, r]) {
        expect(got.messages).toEqual(want.messages);
        expect(got.tools).toEqual(want.tools);
      }
    }
  });
});
