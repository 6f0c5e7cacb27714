// A minimal session state for the session store tests; `pad` sizes it (one stage part of that text).
import { SESSION_SCHEMA_VERSION, type SessionState } from '../../middleware/session/store.ts';

export const paddedState = (tenant: string, id: string, pad = ''): SessionState => ({
  schema: SESSION_SCHEMA_VERSION,
  tenant,
  sessionId: id,
  model: 'm',
  rootHash: 'r',
  calls: 1,
  updatedAt: 1,
  stages: { pad: { v: 1, s: pad } },
});
