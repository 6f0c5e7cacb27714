// Counters a render pool thread keeps go back to the main thread with each reply. The fast BPE
// path (ctxgate_tokenizer_fast_encodes_total, with its mismatch warning) and the native template
// renderings (ctxgate_native_renders_total) count in module state, and each thread has its own
// copy of those modules: without this, every big call's encodes and renders, the ones done on
// the pool, were missing from the metrics, and a mismatch found there was neither counted nor logged.
// Thread side: watchThreadCounts() once at the thread's start, then takeThreadCounts() returns what
// changed since its last call (undefined: nothing).
// Main side: addThreadCounts() adds it there. O(1) per reply (plus the rare mismatches).
import {
  countFastEncodesFrom,
  fastEncodeCounts,
  type FastMismatch,
  onFastMismatch,
} from '../../middleware/tokens/hf-handle.ts';
import { countNativeRendersFrom, nativeRenderStats } from '../../middleware/tokens/native-render.ts';

/** Mismatches kept for the next reply (each switches one tokenizer handle's fast path off: few). */
const MAX_PENDING_MISMATCHES = 16;

export interface ThreadCounts {
  fast: number;
  checked: number;
  mismatches: FastMismatch[];
  rendered: number;
  renderChecked: number;
  renderMismatches: number;
}

let last = { fast: 0, checked: 0, rendered: 0, renderChecked: 0, renderMismatches: 0 };
let pending: FastMismatch[] = [];
let watching = false;

/** Thread side, at its start (before any encode): keeps this thread's mismatches for its replies. */
export function watchThreadCounts(): void {
  if (watching) return;
  watching = true;
  onFastMismatch((m) => {
    if (pending.length < MAX_PENDING_MISMATCHES) pending.push(m);
  });
}

/** Thread side: what this thread counted since the last call, or undefined when nothing. */
export function takeThreadCounts(): ThreadCounts | undefined {
  const r = nativeRenderStats();
  const now = {
    fast: fastEncodeCounts.fast,
    checked: fastEncodeCounts.checked,
    rendered: r.rendered,
    renderChecked: r.checked,
    renderMismatches: r.mismatches,
  };
  const d: ThreadCounts = {
    fast: now.fast - last.fast,
    checked: now.checked - last.checked,
    mismatches: pending,
    rendered: now.rendered - last.rendered,
    renderChecked: now.renderChecked - last.renderChecked,
    renderMismatches: now.renderMismatches - last.renderMismatches,
  };
  last = now;
  pending = [];
  const changed = d.fast || d.checked || d.mismatches.length || d.rendered || d.renderChecked || d.renderMismatches;
  return changed ? d : undefined;
}

/** Main side: adds a thread's counts to this thread's counters (and tells its mismatches). */
export function addThreadCounts(c: ThreadCounts): void {
  countFastEncodesFrom(c.fast, c.checked, c.mismatches);
  countNativeRendersFrom({ rendered: c.rendered, checked: c.renderChecked, mismatches: c.renderMismatches });
}
