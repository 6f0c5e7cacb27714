// A warn-level log that speaks at most once per interval: for faults that repeat on every call
// (a stalled Redis answers no call) the first one is logged with how many were held back since.
export interface WarnLog {
  warn(obj: object, msg: string): void;
}

export function rateLimitedWarn(log: WarnLog, everyMs: number, now: () => number = Date.now): (msg: string) => void {
  let last = -Infinity;
  let held = 0;
  return (msg) => {
    const t = now();
    if (t - last < everyMs) {
      held++;
      return;
    }
    log.warn({ suppressed: held }, msg);
    last = t;
    held = 0;
  };
}
