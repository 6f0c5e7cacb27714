// Progress bar (cli-progress) on stderr when it is a TTY and output is not --json; a no-op
// otherwise so piped and JSON output stay clean.
import cliProgress from 'cli-progress';

export interface Progress {
  start(total: number, label: string): void;
  tick(label?: string): void;
  stop(): void;
}

const NOOP: Progress = { start() {}, tick() {}, stop() {} };

export function createProgress(enabled: boolean): Progress {
  if (!enabled || !process.stderr.isTTY) return NOOP;
  const bar = new cliProgress.SingleBar(
    {
      stream: process.stderr,
      format: ' {label} |{bar}| {value}/{total} calls | {eta_formatted} left',
      hideCursor: true,
      clearOnComplete: false,
    },
    cliProgress.Presets.shades_classic,
  );
  let value = 0;
  let running = false;
  return {
    start(total, label) {
      if (running) bar.stop();
      value = 0;
      bar.start(total, 0, { label });
      running = true;
    },
    tick(label) {
      value++;
      bar.update(value, label ? { label } : {});
    },
    stop() {
      if (running) bar.stop();
      running = false;
    },
  };
}
