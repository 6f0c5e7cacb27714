// bench chaos's (and the tests' own) redis-server child: a port picked free can be taken before
// the server binds it; start() must then fail as such (not connect to the other process), and
// startRedisProc() picks another port.
import { createServer, type Server } from 'node:net';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { RedisPortTakenError, RedisProc, startRedisProc } from '../../loadtest/chaos/redis-proc.ts';

const servers: Server[] = [];
afterAll(() => {
  for (const s of servers) s.close();
});

describe('RedisProc', () => {
  it('a port another process listens on is reported taken, never mistaken for our server', async () => {
    const other = createServer((s) => s.end('-ERR not redis\r\n'));
    servers.push(other);
    const port = await new Promise<number>((r) =>
      other.listen(0, '127.0.0.1', () => r((other.address() as { port: number }).port)),
    );
    const redis = new RedisProc(port);
    try {
      await expect(redis.start()).rejects.toBeInstanceOf(RedisPortTakenError);
    } finally {
      await redis.dispose(); // a second kill of a server already gone returns at once
    }
  });

  it('startRedisProc serves, and start() after kill() comes back on the same port', async () => {
    const redis = await startRedisProc();
    const client = new Redis(redis.url, { maxRetriesPerRequest: 1, lazyConnect: true });
    client.on('error', () => undefined); // refused while it is down, by design
    try {
      expect(await client.ping()).toBe('PONG');
      await redis.kill();
      await redis.start();
      expect(await client.ping()).toBe('PONG');
    } finally {
      client.disconnect();
      await redis.dispose();
    }
  });
});
