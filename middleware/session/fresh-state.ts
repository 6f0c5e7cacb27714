// The state of a session seen for the first time: its owner, model and the hash of the root it
// started with; no stage part yet (each stage starts fresh). O(root size).
import { createHash } from 'node:crypto';
import type { ChatRequest } from '../types.ts';
import { SESSION_SCHEMA_VERSION, type SessionState } from './store.ts';

export function freshSessionState(tenant: string, sessionId: string, model: string, body: ChatRequest): SessionState {
  const root = {
    system: body.messages.filter((m) => m.role === 'system' || m.role === 'developer').slice(0, 1),
    tools: body.tools ?? [],
  };
  return {
    schema: SESSION_SCHEMA_VERSION,
    tenant,
    sessionId,
    model,
    rootHash: createHash('sha256').update(JSON.stringify(root)).digest('hex'),
    calls: 0,
    updatedAt: Date.now(),
  };
}
