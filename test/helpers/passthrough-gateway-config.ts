// The smallest gateway config a process test can start: one passthrough model whose only worker
// is never reached (port 9), health checks off.
import { writeFileSync } from 'node:fs';

export function writePassthroughGatewayConfig(path: string): string {
  writeFileSync(
    path,
    [
      'listen: { host: 127.0.0.1, port: 0 }',
      'health: { interval_ms: 0 }',
      'models:',
      '  - { name: m, layout: passthrough, policy: round_robin, workers: [{ url: "http://127.0.0.1:9", id: w0 }] }',
      '',
    ].join('\n'),
  );
  return path;
}
