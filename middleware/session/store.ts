// Session store contract: one interface, memory and Redis implementations. Keys are always
// namespaced by tenant, so one tenant can never read another's state even with a guessed id.
// State is a JSON document; each stage owns one versioned part of it (stage-state.ts).

/** 2: per-stage parts under `stages` (1 had untyped `layout` and `ledger` records). */
export const SESSION_SCHEMA_VERSION = 2;

/** How a stage's part is stored: the version it was written with, and the part itself (JSON). */
export interface StageStateEntry {
  v: number;
  s: unknown;
}

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
  /** Write version of the stored state this one was read as or written as, where the store gives
   * one (Redis: grows with every write of the session, and after a delete or an expiry starts
   * above any it had; redis-delta-scripts.ts). Not stored as part of the state. */
  version?: number;
  /** Stage name (or the pipeline's own part) → its versioned part; read and written only
   * through the typed slots of stage-state.ts. */
  stages?: Record<string, StageStateEntry>;
  /** sha256 over the canonical JSON of everything above: the old whole-document Redis format's
   * integrity check (the Redis store now verifies each stored chunk instead and leaves it unset). */
  checksum?: string;
}

export interface SessionStore {
  get(tenant: string, sessionId: string): Promise<SessionState | undefined>;
  put(state: SessionState): Promise<void>;
  /** put, unless a write landed after the one `state.version` names (no version: unless a state
   * is stored): false then, nothing written. Sets `state.version` when written. What a write-back
   * of a copy kept during an outage uses (resilient-store.ts); a store without it is written with put. */
  putUnlessNewer?(state: SessionState): Promise<boolean>;
  delete(tenant: string, sessionId: string): Promise<void>;
  /** delete, unless a write landed after the one `since` names (none: unless a state with a write
   * version is stored): false then, nothing deleted. What a write-back of a delete kept during an
   * outage uses (resilient-store.ts); a store without it is deleted with delete. */
  deleteUnlessNewer?(tenant: string, sessionId: string, since: number | undefined): Promise<boolean>;
  /** Ids of a tenant's sessions (bounded; for admin/diagnostics). */
  list(tenant: string, limit?: number): Promise<string[]>;
  close(): Promise<void>;
}
