// Two workers `a` and `b` served as model `m` by round robin (a first), bodies passed through, no
// active health checks, and a worker ejected only after 100 failures: the failover tests' fleet,
// where every failure is one the test injected and must not take a worker out of the rotation.
import { parseConfig } from '../../gateway/config/load.ts';
import type { GatewayConfig } from '../../gateway/config/schema.ts';

export function pairConfig(
  a: { url: string },
  b: { url: string },
  upstream: Record<string, unknown> = {},
): GatewayConfig {
  return parseConfig({
    listen: { host: '127.0.0.1', port: 0 },
    health: { interval_ms: 0, eject_after: 100 },
    upstream,
    models: [
      {
        name: 'm',
        layout: 'passthrough',
        policy: 'round_robin',
        workers: [
          { url: a.url, id: 'a' },
          { url: b.url, id: 'b' },
        ],
      },
    ],
  });
}
