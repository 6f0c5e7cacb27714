// Runs a CLI entry point in-process with stdout and stderr captured (restored even if it throws).
export async function captureOutput(run: () => Promise<number>): Promise<{ rc: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const o = process.stdout.write.bind(process.stdout);
  const e = process.stderr.write.bind(process.stderr);
  process.stdout.write = ((s: string) => {
    out += s;
    return true;
  }) as typeof process.stdout.write;
  process.stderr.write = ((s: string) => {
    err += s;
    return true;
  }) as typeof process.stderr.write;
  try {
    const rc = await run();
    return { rc, out, err };
  } finally {
    process.stdout.write = o;
    process.stderr.write = e;
  }
}
