// Root / trunk / leaf segmentation of a chat request (docs/architecture.md, "Layout zones") with per-message content hashes.
// root = leading system/developer messages (+ tools); leaf = messages after the last assistant
// message (the newest call's inputs); trunk = everything between. O(messages); message hashes are
// memoised per message object (WeakMap), so unchanged messages are hashed once per request.
import { hash } from 'node:crypto';
import type { Segments } from '../stage.ts';
import type { ChatMessage } from '../types.ts';

const hashes = new WeakMap<object, string>();

export function messageHash(m: ChatMessage): string {
  let h = hashes.get(m);
  if (h === undefined) {
    h = hash('sha1', JSON.stringify(m), 'base64').slice(0, 16);
    hashes.set(m, h);
  }
  return h;
}

/**
 * True when JSON.stringify(a) === JSON.stringify(b), decided without serialising: same key order,
 * same primitives. Conservative: anything JSON would transform (toJSON, class instances, NaN,
 * undefined array holes) compares unequal unless identical, so a true answer is always right.
 */
export function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (a[i] === undefined || !sameJson(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b) || !plain(a) || !plain(b)) return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  for (let i = 0; i < ka.length; i++) {
    const k = ka[i];
    if (k !== kb[i] || !sameJson((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k])) return false;
  }
  return true;
}

function plain(o: object): boolean {
  const p = Object.getPrototypeOf(o);
  return p === Object.prototype || p === null;
}

/** Messages of an earlier pass or call with their hashes, index-aligned. */
export interface HashSource {
  messages: readonly ChatMessage[];
  hashes: readonly string[];
}

/**
 * Hash of messages[i]: taken from the first source holding the same object at index i, else from
 * one holding a structurally equal message there, else computed. O(size of the message) at most.
 */
function hashAt(messages: readonly ChatMessage[], i: number, sources: readonly HashSource[]): string {
  const m = messages[i];
  for (const s of sources) if (s.messages[i] === m && i < s.hashes.length) return s.hashes[i];
  for (const s of sources)
    if (i < s.messages.length && i < s.hashes.length && sameJson(m, s.messages[i])) return s.hashes[i];
  return messageHash(m);
}

export function isRootRole(role: string): boolean {
  return role === 'system' || role === 'developer';
}

/** `carry`: earlier passes/calls whose hashes are reused for the same or equal messages. */
export function segment(messages: readonly ChatMessage[], carry: readonly HashSource[] = []): Segments {
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
    messageHashes: carry.length === 0 ? messages.map(messageHash) : messages.map((_, i) => hashAt(messages, i, carry)),
  };
}
