// Session identification (layout step 1), in order: `x-session-id` header, `prompt_cache_key`,
// `user`, else a hash of (tenant, model, root, first user message) computed after volatile spans
// and digits are removed from the root and with tool names sorted, so a clock line or a tool
// reshuffle cannot split one agent's session into many. O(root + first user message).
import { createHash } from 'node:crypto';
import type { ChatRequest, PipelineContext } from '../types.ts';
import { flattenContent } from '../tokens/template-input.ts';
import { isRootRole } from './segmentation.ts';
import { sessionRootKey } from './volatile-spans.ts';

export type SessionSource = 'header' | 'prompt_cache_key' | 'user' | 'hash';

/** Longest client-supplied id kept verbatim; longer ones are hashed (bounded store keys). */
export const MAX_CLIENT_SESSION_ID = 128;

function clientId(v: unknown): string | undefined {
  if (typeof v !== 'string' || v.length === 0) return undefined;
  return v.length <= MAX_CLIENT_SESSION_ID ? v : 'h_' + createHash('sha256').update(v).digest('hex').slice(0, 32);
}

export function identifySession(body: ChatRequest, ctx: Pick<PipelineContext, 'tenant' | 'headers'>): { id: string; source: SessionSource } {
  const header = clientId(ctx.headers['x-session-id']);
  if (header) return { id: header, source: 'header' };
  const pck = clientId(body.prompt_cache_key);
  if (pck) return { id: pck, source: 'prompt_cache_key' };
  const user = clientId(body.user);
  if (user) return { id: user, source: 'user' };
  const h = createHash('sha256');
  h.update(ctx.tenant).update('\u0000').update(body.model ?? '').update('\u0000');
  const messages = Array.isArray(body.messages) ? body.messages : [];
  for (const m of messages) {
    if (!isRootRole(m.role)) break;
    h.update(m.role).update('\u0001').update(sessionRootKey(flattenContent(m.content))).update('\u0000');
  }
  const names = (body.tools ?? []).map((t) => t.function?.name ?? '').sort();
  h.update(names.join('\u0001')).update('\u0000');
  const firstUser = messages.find((m) => m.role === 'user');
  if (firstUser) h.update(flattenContent(firstUser.content));
  return { id: 's_' + h.digest('hex').slice(0, 32), source: 'hash' };
}
