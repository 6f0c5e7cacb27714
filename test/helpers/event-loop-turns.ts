// How many macrotask turns the event loop took while some work ran: tests that check long work
// yields (time slices) count them instead of timing anything.

/** Macrotask turns the event loop took while `work` ran. */
export async function turnsDuring(work: () => Promise<unknown>): Promise<number> {
  let turns = 0;
  let done = false;
  const tick = (): void => {
    if (done) return;
    turns++;
    setImmediate(tick);
  };
  setImmediate(tick);
  // The ticker's first turn is queued before the work starts; count only those during it.
  await new Promise<void>((r) => setImmediate(r));
  const before = turns;
  await work();
  done = true;
  return turns - before;
}
