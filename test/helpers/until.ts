// Polling for a condition that has no event of its own to await, against a deadline that only
// bounds a hang.

/** How long a condition with no event of its own is polled for: a bound for a hang, not a timing
 *  claim (a loaded 2-core machine delays the after-answer work, a reconnect, a child by seconds). */
export const UNTIL_DEADLINE_MS = 60_000;

/** Waits until `cond` holds (the after-answer work runs from a timer after the response); a loaded machine can delay that by seconds. */
export async function until(cond: () => boolean | Promise<boolean>, ms = UNTIL_DEADLINE_MS): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}
