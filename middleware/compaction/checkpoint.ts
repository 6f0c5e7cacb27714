// Checkpoints (docs/architecture.md, "Checkpoints"): a typed record ⟨goal, milestones, hypothesis, constraints,
// artifacts⟩ in canonical JSON, audited before any eviction: every milestone's call exists
// in the ledger with the claimed exit code and output hash, the constraints include every
// constraint of the task, every artifact ref still hashes to its claimed value.
// O(milestones + constraints + artifacts).
import { canonicalJson, sha256Hex } from '../canonical-json.ts';
import { frameNote } from '../redaction/framing.ts';
import { redactDeep } from '../redaction/redact.ts';

export const CHECKPOINT_SCHEMA = 1;
export const MAX_HYPOTHESIS_CHARS = 400;
export const MAX_MILESTONES = 40;
/** Milestones shown in the header (the record keeps MAX_MILESTONES for the audit). */
export const MAX_RENDERED_MILESTONES = 10;

export interface Milestone {
  /** Tool call id. */
  id: string;
  /** 1-based action number. */
  call: number;
  command: string;
  exit: number | null;
  /** sha256 of the call's output as the ledger recorded it. */
  hash: string;
}

export interface Checkpoint {
  schema: number;
  /** Number of this compaction in the session (1-based). */
  n: number;
  goal: string;
  goalHash: string;
  milestones: Milestone[];
  hypothesis: string;
  constraints: string[];
  /** `call:<id>` → sha256 of the stored full output. */
  artifacts: Record<string, string>;
  /** Calls covered: [first, last] action numbers. */
  calls: [number, number];
}

export function checkpointJson(cp: Checkpoint): string {
  return canonicalJson(cp);
}

export function makeCheckpoint(cp: Omit<Checkpoint, 'schema'>): Checkpoint {
  const full: Checkpoint = {
    schema: CHECKPOINT_SCHEMA,
    ...cp,
    hypothesis: cp.hypothesis.slice(0, MAX_HYPOTHESIS_CHARS),
    milestones: cp.milestones.slice(-MAX_MILESTONES),
  };
  // Checkpoints are persisted: secrets never enter them.
  return redactDeep(full).value;
}

export interface AuditInput {
  /** Ledger call records: id → [action number, exit code, output hash]. */
  calls: Readonly<Record<string, readonly [number, number | null, string]>>;
  /** Constraints of the task (pinned). */
  taskConstraints: string[];
  /** Fetches an artifact's content by hash (tenant-scoped by the caller). */
  resolve?: (hash: string) => Promise<string | undefined>;
}

export interface AuditResult {
  ok: boolean;
  problems: string[];
}

export async function auditCheckpoint(cp: Checkpoint, x: AuditInput): Promise<AuditResult> {
  const problems: string[] = [];
  if (cp.schema !== CHECKPOINT_SCHEMA) problems.push(`schema ${cp.schema} != ${CHECKPOINT_SCHEMA}`);
  for (const m of cp.milestones) {
    const rec = x.calls[m.id];
    if (!rec) problems.push(`milestone ${m.id} (call ${m.call}) is not in the ledger`);
    else if (rec[1] !== m.exit) problems.push(`milestone ${m.id} claims exit ${m.exit}, ledger has ${rec[1]}`);
    else if (rec[2] !== m.hash)
      problems.push(`milestone ${m.id} claims output ${m.hash.slice(0, 12)}, ledger has ${rec[2].slice(0, 12)}`);
  }
  const have = new Set(cp.constraints);
  for (const c of x.taskConstraints) if (!have.has(c)) problems.push(`constraint dropped: ${c.slice(0, 80)}`);
  for (const [ref, hash] of Object.entries(cp.artifacts)) {
    if (!x.resolve) break;
    const text = await x.resolve(hash);
    if (text === undefined) problems.push(`artifact ${ref} (${hash.slice(0, 12)}) is missing`);
    else if (sha256Hex(text) !== hash) problems.push(`artifact ${ref} no longer hashes to ${hash.slice(0, 12)}`);
  }
  return { ok: problems.length === 0, problems };
}

export interface RenderOptions {
  /** Text the prompt already shows verbatim (the pinned task): constraints found there are
   * not repeated; the record still holds all of them for the audit. */
  shown?: string;
  maxMilestones?: number;
}

/** The checkpoint header as the model sees it (the history digest follows it). */
export function renderCheckpoint(cp: Checkpoint, o: RenderOptions = {}): string {
  const lines = [
    frameNote(
      `checkpoint ${cp.n}: calls ${cp.calls[0]}–${cp.calls[1]} compacted; ${Object.keys(cp.artifacts).length} full outputs kept by the gateway`,
    ),
    `Goal: ${cp.goal}`,
  ];
  const extra = o.shown ? cp.constraints.filter((c) => !o.shown!.includes(c)) : cp.constraints;
  const pinned = cp.constraints.length - extra.length;
  if (cp.constraints.length) {
    lines.push(
      pinned
        ? `Constraints: the ${pinned} stated in the task above still hold${extra.length ? '; also:' : '.'}`
        : 'Constraints:',
    );
    lines.push(...extra.map((c) => `- ${c}`));
  }
  const max = o.maxMilestones ?? MAX_RENDERED_MILESTONES;
  if (cp.milestones.length) {
    const shownMs = cp.milestones.slice(-max);
    const older = cp.milestones.length - shownMs.length;
    lines.push(
      `Milestones${older ? ` (latest ${shownMs.length}; ${older} earlier in the record)` : ''}:`,
      ...shownMs.map((m) => `- #${m.call} \`${m.command}\` → exit ${m.exit ?? '?'}`),
    );
  }
  if (cp.hypothesis) lines.push(`Hypothesis: ${cp.hypothesis}`);
  return lines.join('\n');
}
