// Root / trunk / leaf segmentation of a chat request (DESIGN §2) with per-message content hashes.
// root = leading system/developer messages (+ tools); leaf = messages after the last assistant
// message (the newest call's inputs); trunk = everything between. O(messages); message hashes are
// memoised per message object (WeakMap), so unchanged messages are hashed once per request.
import { createHash } from 'node:crypto';
import type { Segments } from '../stage.ts';
import type { ChatMessage } from '../types.ts';

const hashes = new WeakMap<object, string>();

export function messageHash(m: ChatMessage): string {
  let h = hashes.get(m);
  if (h === undefined) {
    h = createHash('sha1').update(JSON.stringify(m)).digest('base64').slice(0, 16);
    hashes.set(m, h);
  }
  return h;
}

export function isRootRole(role: string): boolean {
  return role === 'system' || role === 'developer';
}

export function segment(messages: readonly ChatMessage[]): Segments {
  let rootEnd = 0;
  while (rootEnd < messages.length && isRootRole(messages[rootEnd].role)) rootEnd++;
  let lastAssistant = -1;
  for (let i = messages.length - 1; i >= rootEnd; i--) {
    if (messages[i].role === 'assistant') {
      lastAssistant = i;
      break;
    }
  }
  // Without any assistant turn the whole conversation is the newest call: the first user
  // message still belongs to the trunk (the task), the rest to the leaf.
  const leafStart = lastAssistant >= 0 ? lastAssistant + 1 : Math.min(messages.length, rootEnd + 1);
  return {
    root: { start: 0, end: rootEnd },
    trunk: { start: rootEnd, end: leafStart },
    leaf: { start: leafStart, end: messages.length },
    messageHashes: messages.map(messageHash),
  };
}
