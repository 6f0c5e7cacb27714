// Session store contract: one interface, memory and Redis implementations. Keys are always
// namespaced by tenant, so one tenant can never read another's state even with a guessed id.
// State is a JSON document; each middleware part owns one sub-object of it.

export const SESSION_SCHEMA_VERSION = 1;

export interface SessionState {
  schema: number;
  tenant: string;
  sessionId: string;
  model: string;
  /** sha256 of the canonical root (system + tools) the session was created with. */
  rootHash: string;
  /** Calls seen so far (the ledger watermark for resumes). */
  calls: number;
  updatedAt: number;
  /** Layout part (segmentation, volatile relocation, canonical tools, last rendered call). */
  layout?: Record<string, unknown>;
  /** Ledger/invalidation/compaction part. */
  ledger?: Record<string, unknown>;
  /** sha256 over the canonical JSON of everything above; set and verified by stores that serialise (Redis), not by the in-process memory store. */
  checksum?: string;
}

export interface SessionStore {
  get(tenant: string, sessionId: string): Promise<SessionState | undefined>;
  put(state: SessionState): Promise<void>;
  delete(tenant: string, sessionId: string): Promise<void>;
  /** Ids of a tenant's sessions (bounded; for admin/diagnostics). */
  list(tenant: string, limit?: number): Promise<string[]>;
  close(): Promise<void>;
}
